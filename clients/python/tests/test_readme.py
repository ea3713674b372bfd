"""The README's Python example, exactly as written there, against
``sexton dev``: it is cut out of README.md between its markers, so the
README cannot drift from a working program."""

import os
import re
import subprocess
import sys

import harness

BEGIN, END = "<!-- python-example-begin -->", "<!-- python-example-end -->"


def readme_example() -> str:
    text = (harness.REPO / "README.md").read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README.md must mark exactly one Python example"
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    m = re.fullmatch(r"\s*```python\n(.*?)```\s*", block, re.S)
    assert m, "the marked README block is not one ```python fence"
    return m.group(1)


def test_readme_example_runs(dev: harness.DevCluster) -> None:
    code = readme_example()
    assert len(code.strip().splitlines()) == 5, code
    env = dict(os.environ, SEXTON_MASTERS=dev.rpc, PYTHONPATH=str(harness.REPO / "clients" / "python"),
               PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "b'world'\n"
