"""``python -m hibase.samples [NAME]``: list the shipped data files, or write one to stdout
(``python -m hibase.samples ubuntu_releases.csv > releases.csv``)."""

from __future__ import annotations

import sys

from hibase.samples import names, read


def main(argv: list[str]) -> int:
    if not argv:
        print("\n".join(names()))
        return 0
    try:
        data = read(argv[0])
    except FileNotFoundError as e:
        print(f"Error: {e.args[0]}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
