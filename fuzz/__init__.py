"""Property-based fuzzers of the sandbox boundary (hypothesis), run with a time budget.

    python -m fuzz --minutes 3 [--seed S] [--targets corpus,programs,ps_programs,paths,protocol] [--jobs J]

Targets (fuzz/targets.py), each `target(budget_s, seed) -> Stats`:
  corpus       fuzz/corpus/*.py, known sandbox-escape and DoS payloads (fuzz/corpus.py): a fixed
               set, run in full whatever the budget, each payload three times: through
               `fdsl audit --mode restricted` (stopped where and why its header says), with
               RestrictedPython and the guards removed in the jailed worker (stopped where its
               header says), and with its baseline's layers removed and no jail (it must
               succeed: the proof it is real).
  programs     FilesDSL programs generated from the grammar's AST, rendered by the project's
               printer: parse and emit never crash, the emitted code compiles under
               RestrictedPython; a share of them run in the real worker: no canary outside the
               root is read, no run outlives its timeout, no Python traceback is shown.
  ps_programs  PromptScript programs generated in the grammar's shapes, with file actions on
               hostile paths: the same properties, and no run writes a file.
  paths        hostile path strings against every broker file op (FilesService over the
               sandbox): nothing outside the root is read, no host path in any answer.
  protocol     the wire protocol: arbitrary messages straight into Broker.reply, arbitrary
               bytes into the frame parser, and fake workers (mode "os") sending malformed,
               huge, unknown, mistyped and flooding frames: the broker answers with errors or
               ends the worker, never crashes, hangs or leaks descriptors or processes.
"""
