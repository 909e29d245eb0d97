"""Figures, their one-line form, the machine they were measured on, and the README table."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.profiling import Profile

__all__ = [
    "Figure",
    "Results",
    "Target",
    "format_line",
    "machine",
    "markdown_table",
    "write_section",
]


@dataclass(frozen=True)
class Target:
    """A goal a figure is checked against: how it reads, and whether it was met."""

    text: str
    passed: bool


@dataclass(frozen=True)
class Figure:
    """One measured figure and what it is compared with."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    target: Target | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """value / baseline, when there is a baseline."""
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline


@dataclass
class Results:
    """Everything a run measured: the figures, the throughput run's CPU, the profile."""

    figures: list[Figure] = field(default_factory=list)
    throughput: dict[str, Any] = field(default_factory=dict)
    profile: Profile | None = None

    def add(self, figures: list[Figure]) -> None:
        """Keep these figures, printing each as it comes."""
        for figure in figures:
            print(format_line(figure), flush=True)
        self.figures += figures


def number(value: float) -> str:
    """A figure with as many digits as it deserves: 12,345 / 123 / 12.3 / 1.23 / 0.123."""
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _verdict(figure: Figure) -> str:
    if figure.target is None:
        return ""
    return f"target {figure.target.text}: {'PASS' if figure.target.passed else 'FAIL'}"


def format_line(figure: Figure) -> str:
    """`name  value unit  baseline ... ratio ...  target ...: PASS`, aligned for a terminal."""
    value = f"{number(figure.value)} {figure.unit}"
    baseline = f"{number(figure.baseline)} {figure.unit}" if figure.baseline is not None else "-"
    ratio = f"{figure.ratio:.2f}" if figure.ratio is not None else "-"
    parts = [f"{figure.name:<44}", f"{value:>16}", f"baseline {baseline:>16}", f"ratio {ratio:>5}"]
    for extra in (_verdict(figure), figure.note):
        if extra:
            parts.append(extra)
    return "  ".join(parts).rstrip()


def markdown_table(figures: list[Figure]) -> str:
    """The figures as a Markdown table."""
    rows = [
        "| figure | value | baseline | ratio | target | result |",
        "| --- | ---: | ---: | ---: | --- | --- |",
    ]
    for f in figures:
        baseline = f"{number(f.baseline)} {f.unit}" if f.baseline is not None else "–"
        ratio = f"{f.ratio:.2f}" if f.ratio is not None else "–"
        target = f.target.text if f.target else "–"
        result = ("PASS" if f.target.passed else "**FAIL**") if f.target else "–"
        name = f"{f.name} ({f.note})" if f.note else f.name
        rows.append(
            f"| {name} | {number(f.value)} {f.unit} | {baseline} | {ratio} | {target} | {result} |"
        )
    return "\n".join(rows)


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else "unknown CPU"


def _rabbitmq_version() -> str:
    try:
        done = subprocess.run(
            ["rabbitmqctl", "version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (rabbitmqctl not available)"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return lines[-1].strip() if done.returncode == 0 and lines else "unknown"


def machine() -> str:
    """`date, CPU model, N cores, RabbitMQ x.y.z` for the results' heading."""
    today = datetime.date.today().isoformat()
    cores = os.cpu_count() or 0
    return f"{today}, {_cpu_model()}, {cores} cores, RabbitMQ {_rabbitmq_version()}"


def write_section(readme: Path, name: str, text: str) -> None:
    """Replace what is between `<!-- name:start -->` and `<!-- name:end -->` in `readme`."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    content = readme.read_text() if readme.exists() else ""
    block = f"{start}\n{text.strip()}\n{end}"
    if start in content and end in content:
        before = content.split(start, 1)[0]
        after = content.split(end, 1)[1]
        content = before + block + after
    else:
        content = content.rstrip() + "\n\n" + block + "\n"
    readme.write_text(content)
