"""The untrusted side: the jailed worker process that runs a transpiled script.

Stdlib and RestrictedPython only; nothing here opens a file, socket or process after start-up.
"""
