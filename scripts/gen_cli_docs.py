"""Write docs/cli.md, the command-line reference, from the click commands' --help.

    python scripts/gen_cli_docs.py          # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check  # exit 1 if docs/cli.md differs from the commands

Every command and subcommand of `hibase`, in the order `hibase --help` lists them, with its help
text exactly as `hibase CMD --help` prints it at 100 columns. tests/test_cli_docs.py fails when
the committed file is stale: run this after changing a command's options or help.
"""

from __future__ import annotations

import pathlib
import sys

import click

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's hibase, whatever the venv points at

WIDTH = 100
HEADER = """\
# CLI reference

Generated from the commands' `--help` by `scripts/gen_cli_docs.py` (do not edit by hand: run
`python scripts/gen_cli_docs.py` after changing a command; `tests/test_cli_docs.py` fails while
this file is stale). Every command takes the store folder, or a `thrift://` URL, first; errors
are one `Error: ...` line and exit code 1. The [guide](guide.md) shows them at work.
"""


def _walk(cmd: click.Command, path: list[str], parent: click.Context | None):
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, max_content_width=WIDTH,
                        terminal_width=WIDTH)
    yield path, cmd, ctx
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def render() -> str:
    from hibase.cli import cli
    parts = [HEADER]
    entries = list(_walk(cli, ["hibase"], None))
    parts.append("\n".join(f"- [`{' '.join(p)}`](#{'-'.join(p)})" for p, _, _ in entries[1:]))
    for path, cmd, ctx in entries:
        name = " ".join(path)
        help_text = cmd.get_help(ctx).rstrip()
        parts.append(f"## {name}\n\n```text\n{help_text}\n```")
    return "\n\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    target = ROOT / "docs" / "cli.md"
    text = render()
    if "--check" in argv:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print("docs/cli.md is stale: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
