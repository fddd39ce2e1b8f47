"""PromptScript: orchestration with policies, retries, timeouts, guards and file actions
(grammar.lark is its reference)."""
