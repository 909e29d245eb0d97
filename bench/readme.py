"""Writing a run's results and profile into bench/README.md, between marker comments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.profiling import Profile
from bench.report import Figure, Results, markdown_table, write_section

__all__ = ["write_readme"]

_TOP = 15


def _results(where: str, quick: bool, figures: list[Figure], pinning: str | None) -> str:
    flags = (" --quick" if quick else "") + (" --pin" if pinning else "")
    checked = [f for f in figures if f.target is not None]
    passed = sum(1 for f in checked if f.target and f.target.passed)
    pinned = f" {pinning[0].upper()}{pinning[1:]}." if pinning else ""
    return (
        f"Measured with `python -m bench{flags}` on {where}.{pinned} "
        f"Targets met: {passed} of {len(checked)}.\n\n" + markdown_table(figures)
    )


def _cpu(throughput: dict[str, Any]) -> str:
    steps, cpu_s, seconds = throughput["steps"], throughput["cpu_s"], throughput["seconds"]
    lines = [
        f"Manager CPU over the throughput run: {cpu_s:.2f} s for {steps:,} steps in "
        f"{seconds:.2f} s, **{cpu_s / steps * 1e6:.0f} µs per step** "
        f"({cpu_s / seconds:.0%} of one core). By thread (from /proc/<pid>/task):",
        "",
        "| manager thread | CPU s | µs/step |",
        "| --- | ---: | ---: |",
    ]
    for name, used in throughput["threads_cpu_s"].items():
        lines.append(f"| {name} | {used:.2f} | {used / steps * 1e6:.0f} |")
    lines += [
        "",
        "CPU per step of every process, in the manager's run and in the baseline's run "
        f"({throughput['seconds']:.1f} s and {throughput['baseline_seconds']:.1f} s):",
        "",
        "| process | manager run, µs/step | baseline run, µs/step |",
        "| --- | ---: | ---: |",
    ]
    for role, (managed, base) in throughput["roles_us_per_step"].items():
        lines.append(f"| {role} | {managed:.0f} | {base:.0f} |")
    return "\n".join(lines)


def _profile(profile: Profile) -> str:
    every = sum(profile.threads.values())
    threads = ", ".join(
        f"{name} {100 * n / every:.0f}%" for name, n in profile.threads.most_common()
    )
    lines = [
        f"py-spy sampled the manager at 200 Hz during a second throughput run (a separate run: "
        f"sampling slows the process), {every:,} samples: {threads}. py-spy counts a thread "
        "waiting inside a C call as busy, which overstates the other threads (journal-writer, "
        "waiting on fsync; the journal reader's aiosqlite thread, waiting for queries): by /proc "
        "above, the main thread does most of "
        f"the work. The tables below are the main thread's {profile.samples:,} samples.",
        "",
        "Self time by layer (the file of the innermost Python frame):",
        "",
        "| layer | self % |",
        "| --- | ---: |",
    ]
    for layer, n in profile.layers.most_common():
        lines.append(f"| {layer} | {profile.percent(n):.1f} |")
    lines += ["", "Top functions by self time:", "", "| function | self % | total % |"]
    lines.append("| --- | ---: | ---: |")
    for name, n in profile.self_time.most_common(_TOP):
        total = profile.percent(profile.total_time[name])
        lines.append(f"| `{name}` | {profile.percent(n):.1f} | {total:.1f} |")
    lines += ["", "The manager's own functions by total (inclusive) time:", ""]
    lines += ["| function | total % |", "| --- | ---: |"]
    for name, n in profile.own_functions(limit=_TOP + 5):
        lines.append(f"| `{name}` | {profile.percent(n):.1f} |")
    return "\n".join(lines)


def write_readme(
    readme: Path, where: str, quick: bool, results: Results, pinning: str | None = None
) -> None:
    """Replace the README's `results` and `cpu` sections, and `profile` when there is one;
    `pinning`: the --pin header line, recorded with the results."""
    write_section(readme, "results", _results(where, quick, results.figures, pinning))
    write_section(readme, "cpu", _cpu(results.throughput))
    if results.profile is not None:
        write_section(readme, "profile", _profile(results.profile))
