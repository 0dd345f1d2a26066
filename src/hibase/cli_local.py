"""`hibase bench local`: the global index against local indexes visiting every region (hindex)
and routed by split counting Bloom filters (hibase.bench.local). Added to the bench group by
register(), as cli.py's EXTENSIONS do."""

from __future__ import annotations

import click

__all__ = ["register"]


def _command(bench_options, finish_bench) -> click.Command:
    @click.command("local")
    @click.option("--rows", type=click.IntRange(min=1), default=200_000, show_default=True,
                  help="Telecom rows loaded into each of the three tables.")
    @click.option("--regions", type=click.IntRange(min=1), default=16, show_default=True,
                  help="Regions of each table (pre-split at rowkey quantiles).")
    @click.option("--queries", type=click.IntRange(min=1), default=20, show_default=True,
                  help="Values queried per query type.")
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                  help="Seed of the generated data.")
    @click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
                  help="Put the temporary store under DIR.")
    @bench_options
    def bench_local(rows: int, regions: int, queries: int, seed: int, workdir: str | None,
                    as_json: bool, output: str | None, progress: bool) -> None:
        """Local (per-region) indexes against the global index: per query type the regions
        visited and the median latency of the global index, of the local index visiting every
        region (hindex) and of the local index routed by split counting Bloom filters; write
        throughput with a global and with a local index.

        Example:

        \b
            hibase bench local --rows 200000 --regions 16
            hibase bench local --rows 50000 --regions 8 --json --output local.json
        """
        from .bench import local as bench

        report = bench.run(rows=rows, regions=regions, queries=queries, seed=seed,
                           workdir=workdir, progress=progress)
        finish_bench(report, as_json, output, bench.summary)

    return bench_local


def register(cli_group: click.Group) -> None:
    """Add `bench local` to the CLI's bench group, if there is one."""
    bench_group = cli_group.commands.get("bench")
    if not isinstance(bench_group, click.Group):
        return
    try:
        from .cli_bench import bench_options, finish_bench
    except ImportError:  # pragma: no cover - the bench group lives elsewhere
        return
    bench_group.add_command(_command(bench_options, finish_bench))
