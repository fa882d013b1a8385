"""``toolscore serve``: evaluate live agents from their OpenTelemetry export, call by call.

An OTLP/HTTP receiver (:mod:`.app`, Starlette on uvicorn) decodes spans (:mod:`.otlp`),
groups them into sessions each evaluated by the project's one pipeline (:mod:`.sessions`),
and reports findings and verdicts as they happen (:mod:`.outputs`: console lines, JSON lines,
Prometheus metrics in :mod:`.metrics`, OpenTelemetry evaluation events in :mod:`.events`).
The command line is :mod:`.command`. Needs the ``serve`` extra
(``pip install 'toolscore[serve]'``); ``import toolscore`` never imports this package.
"""
