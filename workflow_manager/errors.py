"""The errors workflow-manager raises, one tree under `ManagerError`.

    ManagerError               anything the manager reports to a user
    ├── ConfigError            a workflow file is missing, unreadable or invalid (every problem)
    ├── SubmitError            a job cannot be started
    │   ├── UnknownWorkflow    no workflow of that name
    │   ├── InvalidPayload     the payload is not a JSON object
    │   ├── InvalidJobId       the job id is not a UUID
    │   ├── DuplicateJob       a job with that id already exists
    │   ├── DuplicateKey       an unfinished job of the workflow has the same unique key
    │   └── Debounced          not an error: the trigger joined a debounce window's job
    ├── JobNotFound            no job (or no such step) has the given id (cancel, retry, signal)
    ├── JobConflict            the job is not in a state that allows the request (cancel,
    │                          retry, signal)
    ├── NotOwner               the job is in a partition another manager runs, or may be
    │                          (several managers)
    ├── BrokerError            RabbitMQ cannot be reached or refused an operation
    │   └── Unroutable         a published message reached no queue (the queue does not exist)
    ├── JournalError           the journal (SQLite or PostgreSQL) cannot be opened or written
    │   └── FencedOut          a commit for a partition whose lease another manager has taken
    ├── BatchRefused           the journal cannot hold one message's rows (the journal is fine)
    ├── MessageFailed          one message (delivery, request, timer) could not be handled: it
    │                          was refused and memory rebuilt from the journal; others go on
    └── ApiUnreachable         the manager's HTTP API cannot be reached (CLI client side)

Every message is written for the person who hit it: it names the thing, shows the bad
value and, where there is one, suggests the fix.
"""

from __future__ import annotations

__all__ = [
    "ManagerError",
    "ConfigError",
    "SubmitError",
    "UnknownWorkflow",
    "InvalidPayload",
    "InvalidFork",
    "InvalidJobId",
    "DuplicateJob",
    "DuplicateKey",
    "Debounced",
    "JobNotFound",
    "JobConflict",
    "NotOwner",
    "BrokerError",
    "Unroutable",
    "JournalError",
    "FencedOut",
    "BatchRefused",
    "MessageFailed",
    "ApiUnreachable",
]


class ManagerError(Exception):
    """Root of every error the manager reports to a user."""


class ConfigError(ManagerError):
    """A workflow file is invalid; `problems` holds one line per problem, each naming its place."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class SubmitError(ManagerError):
    """A job cannot be started."""


class UnknownWorkflow(SubmitError):
    """No workflow has the requested name."""


class InvalidPayload(SubmitError):
    """The job payload is not a JSON object."""


class InvalidJobId(SubmitError):
    """The job id is not a UUID."""


class InvalidFork(SubmitError):
    """A fork names no step of its workflow, or asks for something a fork cannot do."""


class DuplicateJob(SubmitError):
    """A job with the requested id already exists."""


class DuplicateKey(SubmitError):
    """An unfinished job of the workflow (`job_id`) has the submission's unique key."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class Debounced(SubmitError):
    """The submission joined an open debounce window: job `job_id` does its work (the HTTP
    API answers it as a success, naming that job)."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class JobNotFound(ManagerError):
    """No job has the given id."""


class JobConflict(ManagerError):
    """The job's state does not allow the request (e.g. cancelling a finished job)."""


class NotOwner(ManagerError):
    """The job is in `partition`, which another manager runs (or none yet): ask that one.

    `partition` None: this manager does not know the job, and its partition cannot be told
    (a running child job has no journal row yet): another manager may run it.
    """

    def __init__(self, message: str, partition: int | None) -> None:
        super().__init__(message)
        self.partition = partition


class BrokerError(ManagerError):
    """RabbitMQ cannot be reached or refused an operation."""


class Unroutable(BrokerError):
    """RabbitMQ returned a published message: no queue of that name exists."""


class JournalError(ManagerError):
    """The journal (a SQLite file, a PostgreSQL database) cannot be opened, is not ours, or
    cannot be written."""


class FencedOut(JournalError):
    """A commit named a partition whose lease another manager has taken since (a newer epoch)."""


class BatchRefused(ManagerError):
    """The journal cannot hold one batch (a value it cannot encode); nothing of it was written
    and the journal stays healthy: only the message that made the batch is refused."""


class MessageFailed(ManagerError):
    """Handling one message failed inside the manager (a bug, or an input nobody foresaw).

    The message is refused; the manager's memory was rebuilt from its journal, so nothing of
    the message is left half-done, and other jobs go on. `cause` is what went wrong.
    """

    def __init__(self, what: str, cause: BaseException) -> None:
        detail = str(cause) or type(cause).__name__
        super().__init__(f"the manager could not handle {what}: {detail}")
        self.what = what
        self.cause = cause


class ApiUnreachable(ManagerError):
    """The manager's HTTP API cannot be reached."""
