"""The `baton` command: the top layer, which nothing else imports.

It starts what the lower layers provide (the embedded Temporal server, workers, the media
gateway), places calls and checks scenarios. The contracts every process shares live in
`contracts`; process plumbing (settings, logging, the Temporal client) in `runtime`.
"""
