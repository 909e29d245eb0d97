"""Payloads by reference, the manager's side (docs/protocol.md, "Payloads by reference"):
`stage` (the step of intake that stores large values and reads back what rules need),
`retention` (the stored values of jobs long ended removed), `options` (`serve`'s flags),
`metrics` (what the stage did, for /metrics) and `view` (references shown by size, for
`watch`). The reference format and the stores themselves are the shared `payload_refs`."""
