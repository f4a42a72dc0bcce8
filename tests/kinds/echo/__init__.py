"""echo: a test-only kind that proves docs/architecture.md's recipe: everything of it is in this folder and
one `register()` line stands for the registry's. Each trial starts one container and times `echo` in it."""
