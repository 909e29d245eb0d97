# One image for the manager and the Python workers.
#   manager (default):  docker run -p 8080:8080 -e AMQP_URL=amqp://guest:guest@rabbitmq:5672/ IMAGE
#   a Python worker:    docker run -e AMQP_URL=... IMAGE pyworker examples/word-counts/workers.py:worker
# The default workflow file is the repository's workflows.yaml, copied to /app/workflows.yaml;
# mount another one there to change it. The SQLite journal lives in the /data volume.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# The package first, so editing the examples or the workflow file does not reinstall it.
COPY pyproject.toml README.md ./
COPY workflow_manager ./workflow_manager
COPY pyworker ./pyworker
COPY amqp_outage ./amqp_outage
COPY payload_refs ./payload_refs
RUN pip install . && rm -rf build *.egg-info

COPY workflows.yaml ./workflows.yaml
COPY examples ./examples

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin wm \
    && mkdir /data /payloads \
    && chown wm:wm /data /payloads
USER wm
VOLUME ["/data", "/payloads"]

EXPOSE 8080
CMD ["workflow-manager", "serve", "--config", "/app/workflows.yaml", "--db", "/data/wm.db", "--host", "0.0.0.0", "--port", "8080"]
