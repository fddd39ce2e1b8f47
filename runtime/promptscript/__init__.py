"""PromptScript's broker side: the session (policy scopes, budgets, blocks), the project's file
actions, RUN_CMD, patches and the run log."""
