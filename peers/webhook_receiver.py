"""A webhook receiver on loopback for the Python peers' tests: a standard-library HTTP server on
127.0.0.1:0 that keeps every request it answered 2xx (headers and the body's exact bytes), and
answers 503 while `down` is set, counting those refusals.

    with Receiver() as receiver:
        receiver.url              # http://127.0.0.1:PORT/hook
        receiver.wait_for(check)  # the deliveries, once `check(deliveries)` is true
"""

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.refused = 0
        self.down = False
        self._lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver._lock:
                    if receiver.down:
                        receiver.refused += 1
                        status = 503
                    else:
                        receiver.deliveries.append(Delivery(
                            {name.lower(): value for name, value in self.headers.items()}, body
                        ))
                        receiver._lock.notify_all()
                        status = 204
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def set_down(self, down: bool) -> None:
        with self._lock:
            self.down = down

    def wait_for(self, check, timeout: float = 30.0) -> list[Delivery]:
        """The deliveries taken so far, once `check` holds of them (else fails after `timeout`)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not check(self.deliveries):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.deliveries)} deliveries after {timeout} s")
                self._lock.wait(left)
            return list(self.deliveries)
