"""The README's commands under "## On a fresh machine": the first line of each ```bash block there, in order.

CI runs them exactly as written (``.ci/run``), and tests/test_install.py checks what they install, so both
read them here.  ``python3 tools/readme_commands.py N`` prints the Nth (1-based).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def fresh_machine_commands(text: str | None = None) -> list[str]:
    """The first line of each ```bash block of the README's "## On a fresh machine" section."""
    text = README.read_text(encoding="utf-8") if text is None else text
    section = text.split("\n## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines()[0] for block in re.findall(r"```bash\n(.*?)\n```", section, re.S)]


def main(argv: list[str]) -> int:
    commands = fresh_machine_commands()
    if len(argv) != 1 or not argv[0].isdigit() or not 1 <= int(argv[0]) <= len(commands):
        print(f"usage: python3 tools/readme_commands.py N   (1..{len(commands)})", file=sys.stderr)
        return 2
    print(commands[int(argv[0]) - 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
