"""PromptScript's language-model layer, in the broker only (never imported by the worker).

  * config.py     an LLM call's options: client + call + command line + environment; keys; redaction
  * schema.py     what a model may answer: the plan schema, decide()'s schemas, bounds on size and depth
  * prompts.py    the messages sent: the system prompt (allowed actions only), memory, context files
  * providers.py  the mock provider and openai/openrouter/anthropic/custom through pydantic-ai (lazy)
  * layer.py      the ``ps.llm`` op: budgets (--max-llm-calls, --max-cost), deadlines, retries, the run log
  * memory.py     ``memory_key``: compact memory persisted in the project's .ps-runs/memory/

pydantic-ai, openai, anthropic and genai-prices are imported on the first call that reaches a
provider: a script that makes no LLM call never loads them.
"""
