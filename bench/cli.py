"""coin-cli start-up cost: median wall time of ``coin-cli getblockcount`` vs ``python -c pass``.

Usage: ``python bench/cli.py [coin-cli options]``, for example
``python bench/cli.py -regtest -datadir=/tmp/node -rpcport=28443``. The options
go to every coin-cli run. Without options the bench starts its own regtest
coind (tests/nodeharness.py) and stops it afterwards. If no node answers, the
import-only path (``coin-cli -version``) is timed instead and the JSON says so.

Prints one JSON object; times in milliseconds, medians of 20 runs, plus the
cumulative ``-X importtime`` of ``coincli.main`` (median of 5).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the console script generated for coincli.main:main does.
ENTRY = "import sys; from coincli.main import main; sys.exit(main())"


def cli_command() -> list[str]:
    """The installed coin-cli, else the same entry point run from this source tree."""
    installed = shutil.which("coin-cli")
    return [installed] if installed else [sys.executable, "-c", ENTRY]


def environment() -> dict[str, str]:
    """The source tree on the path, and bytecode caching on, as in an installed package."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    return env


def median_ms(command: list[str], env: dict[str, str], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def import_ms(env: dict[str, str]) -> float:
    """Cumulative import time of coincli.main as ``python -X importtime`` reports it."""
    samples = []
    for _ in range(5):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import coincli.main"],
                             env=env, capture_output=True, text=True, check=True).stderr
        line = [ln for ln in err.splitlines() if ln.rstrip().endswith("| coincli.main")][-1]
        samples.append(int(line.split("|")[1]) / 1000)
    return statistics.median(samples)


def main() -> None:
    env = environment()
    options = sys.argv[1:]
    node = None
    if not options:
        sys.path.insert(0, REPO)
        from tests.nodeharness import NodeProcess

        node = NodeProcess.start(tempfile.mkdtemp(prefix="coin-bench-cli-"))
        options = node.args[:3] + ["-rpcuser=u", "-rpcpassword=p"]
    try:
        run(env, options)
    finally:
        if node is not None:
            node.stop()


def run(env: dict[str, str], options: list[str]) -> None:
    cli = cli_command()
    probe = subprocess.run(cli + options + ["getblockcount"], env=env, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)
    result: dict[str, object] = {"benchmark": "coin-cli start-up", "runs": RUNS}
    if probe.returncode == 0:
        command = cli + options + ["getblockcount"]
        result["mode"] = "getblockcount"
    else:
        command = cli + options + ["-version"]
        result["mode"] = "import-only"
        result["note"] = ("no node answered getblockcount (%s); timed coin-cli -version, which "
                          "imports everything the RPC path does but sends nothing"
                          % (probe.stderr.strip().splitlines() or ["no output"])[0])
    baseline = median_ms([sys.executable, "-c", "pass"], env)
    measured = median_ms(command, env)
    result.update({
        "command": command,
        "python_pass_ms": round(baseline, 2),
        "coin_cli_ms": round(measured, 2),
        "overhead_ms": round(measured - baseline, 2),
        "ratio": round(measured / baseline, 3),
        "import_coincli_main_ms": round(import_ms(env), 2),
    })
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
