"""Every ```python block of docs/API.md runs on its own (imports included) on the CPU: each is
executed in a fresh namespace, so a block that leans on another one's names fails here. The
blocks' own asserts check the figures the page quotes (precision, shapes, levels)."""
import pathlib
import re

import jax
import pytest

API = pathlib.Path(__file__).resolve().parents[1] / "docs" / "API.md"


def python_blocks(text: str):
    """[(line number, source)] of the fenced ```python blocks of a markdown text."""
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.M | re.S):
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return blocks


BLOCKS = python_blocks(API.read_text())


def test_the_page_has_examples():
    assert len(BLOCKS) >= 8
    assert python_blocks("x\n```python\na = 1\n```\n```bash\nb\n```\n") == [(3, "a = 1\n")]


@pytest.mark.parametrize("line, source", BLOCKS, ids=[f"API.md:{line}" for line, _ in BLOCKS])
def test_block_runs_on_cpu(line, source):
    code = compile(source, f"{API}:{line}", "exec")
    with jax.default_device(jax.devices("cpu")[0]):
        exec(code, {"__name__": f"api_docs_{line}"})
