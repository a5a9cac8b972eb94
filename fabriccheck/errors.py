"""Errors the CLI turns into one clear line and exit code 2."""


class FabricCheckError(Exception):
    """Bad input, bad usage, or a check that cannot run. The message names the file, field or option."""


class DumpShapeError(FabricCheckError):
    def __init__(self, where: str, path: str, expected: str) -> None:
        super().__init__(f"{where}: field {path}: expected {expected}")


STDIN_NAME = "standard input (-)"  # how a message names `-`, the file argument that means standard input
