"""A live `agentwire serve` for the Python peers' tests: the binary the workspace built, started on
port 0 with an agentwire.toml and scripted brains written into a temporary directory.

    with AgentwireServer(CONFIG, {"talker.json": SCRIPT}) as server:
        server.url        # http://127.0.0.1:PORT, from the `agentwire listening on` line
        server.dir        # the temporary directory (config, scripts, workspaces, data)

The binary is `$AGENTWIRE_BIN`, else `$CARGO_TARGET_DIR/debug/agentwire`, else
`target/debug/agentwire` of the repository; `scripts/test` has built it (cargo test builds the
CLI's binary) before the peers run. Nothing here builds it, so several suites cost nothing more;
a missing binary, or one older than a source in cargo's dep-info file for it, fails with the
command that makes it.
The server is stopped (SIGTERM, then SIGKILL after 5 s) and the directory removed on exit.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = "cargo build -p agentwire-cli"
LISTENING = re.compile(r"^agentwire listening on (http://\S+)$")


def binary() -> Path:
    if os.environ.get("AGENTWIRE_BIN"):
        return Path(os.environ["AGENTWIRE_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    return target / "debug" / "agentwire"


def check_fresh(path: Path, build: str = BUILD) -> None:
    """Refuses a missing binary, or one older than a source it is built from (the sources
    cargo lists in its dep-info file beside the binary); `build` is the command that makes it."""
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build it first with `{build}`")
    dep_info = path.with_name(path.name + ".d")
    if not dep_info.exists():
        return
    built = path.stat().st_mtime
    _, _, sources = dep_info.read_text().partition(": ")
    for source in sources.split():
        source = Path(source)
        if source.exists() and source.stat().st_mtime > built:
            raise RuntimeError(f"{path} is older than {source}: rebuild it with `{build}`")


class AgentwireServer:
    def __init__(self, config: str, files: dict[str, object], dirs: tuple[str, ...] = ()):
        self.config = config
        self.files = files
        self.dirs = dirs
        self.dir: Path | None = None
        self.url: str | None = None
        self.process: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def __enter__(self) -> "AgentwireServer":
        path = binary()
        check_fresh(path)
        self.dir = Path(tempfile.mkdtemp(prefix="agentwire-peer-serve-"))
        try:
            self._start(path)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, path: Path) -> None:
        for name, content in self.files.items():
            text = content if isinstance(content, str) else json.dumps(content)
            (self.dir / name).write_text(text)
        for name in self.dirs:
            (self.dir / name).mkdir(parents=True)
        (self.dir / "agentwire.toml").write_text(self.config)
        env = dict(os.environ)
        for name in ("AGENTWIRE_ADDR", "AGENTWIRE_DATABASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            [str(path), "serve", "--config", str(self.dir / "agentwire.toml"),
             "--addr", "127.0.0.1:0", "--data-dir", str(self.dir / "data")],
            cwd=self.dir, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        found: list[str] = []
        listening = threading.Event()
        reader = threading.Thread(target=self._read_stdout, args=(found, listening), daemon=True)
        reader.start()
        listening.wait(timeout=20)
        if not found:
            raise RuntimeError(
                f"no `agentwire listening on` line within 20 s; stderr: {''.join(self.stderr)}"
            )
        self.url = found[0]

    def _read_stdout(self, found: list[str], listening: threading.Event) -> None:
        for line in self.process.stdout:
            match = LISTENING.match(line.strip())
            if match:
                found.append(match.group(1))
                break
        # Found, or the server exited first.
        listening.set()
        # Keep reading so the server never blocks on a full pipe.
        for _ in self.process.stdout:
            pass

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
