"""A protocol-level fake of the Pantograph REPL (see ``README.md``); ``launcher`` has the test helpers."""
