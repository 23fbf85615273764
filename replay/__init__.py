"""ctxreplay: replay recorded coding-agent runs under context-management policies.

The layers, in the order data flows (``docs/architecture.md``): ``ingest/`` (log files -> runs
-> the Parquet store), ``policy/`` (what the user configures), ``engine/`` (a prepared run under
a policy -> a trace), ``corpus`` and ``apply_policy`` (the library's entry points over a
dataset), ``cli/`` (the ``replay`` commands), ``synth/`` (the generated corpus in ``logs/``);
the analyses are the ``analysis`` package.

A regular package, not a namespace one: ``replay`` resolves to this folder only, so a stale
copy elsewhere on the path never supplies a module.
"""
