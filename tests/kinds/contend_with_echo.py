"""contend's command line with the test-only kind echo registered (its one line), as `python -m
tests.kinds.contend_with_echo ARGS` from the checkout."""
from contend.cli import app
from contend.kinds.registry import register

from .echo.study import EchoStudy

register(EchoStudy)

if __name__ == "__main__":
    app()
