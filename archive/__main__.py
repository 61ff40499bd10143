from .cli import cli

cli(prog_name="sesh-archive")
