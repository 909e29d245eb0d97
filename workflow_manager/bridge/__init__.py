"""`workflow-manager bridge`: serve HTTP steps (`http:` in the workflow YAML) over RabbitMQ.

Built on pyworker's Worker: one handler per HTTP step queue, which POSTs the step input to the
step's URL with a pooled httpx client and replies with the JSON object answered.

    routes.py   the file's HTTP steps, one Route per queue, headers' ${VAR}s expanded (pure)
    caller.py   HttpStep, the handler: send the input, interpret the answer
    service.py  serve_bridge(workflows, settings, environ): the Worker, the client, the loop
    cli.py      the `bridge` subcommand (workflow_manager.cli adds it)
    errors.py   BridgeConfigError and the step failures

The package imports nothing heavy itself, so `workflow-manager --help` stays fast.
"""
