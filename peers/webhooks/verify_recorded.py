"""Verifies every request `agentwire-load --webhooks --record FILE` recorded with the Standard
Webhooks reference library (PyPI `standardwebhooks`, pinned in requirements.txt):
`Webhook(secret).verify(body, headers)` on each request's exact body bytes and its three
`webhook-*` headers, with the secret `POST /v1/webhooks` answered. Prints the counts (verified /
failed, by the receiver's answer, and the status changes verified) and exits non-zero when any
request fails.

    peers/webhooks/.venv/bin/python peers/webhooks/verify_recorded.py deliveries.ndjson [--json]

The library also refuses a `webhook-timestamp` more than 5 minutes from its clock. A recording of
10,000 runs takes longer than that to make and to verify, so each request is verified with the
library's clock set to the moment the receiver took it: the check a receiver makes on arrival.
"""

import base64
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone

import standardwebhooks.webhooks as library
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


@dataclass
class Counts:
    """What the library said of a recording."""

    requests: int = 0
    verified: int = 0
    failed: int = 0
    # Verified requests by the status the receiver answered (204, or 503 while down).
    verified_by_answer: Counter = field(default_factory=Counter)
    # Failures by the library's message.
    failures: Counter = field(default_factory=Counter)
    # The `webhook-id`s (status changes) of the verified requests the receiver answered 2xx.
    delivered_ids: set = field(default_factory=set)

    def summary(self) -> dict:
        return {
            "requests": self.requests,
            "verified": self.verified,
            "failed": self.failed,
            "verified_by_answer": {str(k): v for k, v in sorted(self.verified_by_answer.items())},
            "failures": dict(self.failures),
            "status_changes_delivered": len(self.delivered_ids),
        }


class _StoppedClock(datetime):
    """`datetime` whose `now()` is `moment`: the library's clock while one request is verified."""

    moment = datetime.fromtimestamp(0, tz=timezone.utc)

    @classmethod
    def now(cls, tz=None):
        return cls.moment if tz is None else cls.moment.astimezone(tz)


def verify_line(line: dict) -> dict:
    """The payload of one recorded request, as the library verified and parsed it; raises
    `WebhookVerificationError` when the library refuses it."""
    body = base64.b64decode(line["body_base64"], validate=True)
    _StoppedClock.moment = datetime.fromtimestamp(line["received_at"], tz=timezone.utc)
    real = library.datetime
    library.datetime = _StoppedClock
    try:
        return Webhook(line["secret"]).verify(body, line["headers"])
    finally:
        library.datetime = real


def verify_lines(lines) -> Counts:
    counts = Counts()
    for line in lines:
        counts.requests += 1
        try:
            verify_line(line)
        except (WebhookVerificationError, ValueError) as error:
            counts.failed += 1
            counts.failures[f"{type(error).__name__}: {error}"] += 1
            continue
        counts.verified += 1
        counts.verified_by_answer[line["answered"]] += 1
        if 200 <= line["answered"] < 300:
            counts.delivered_ids.add(line["headers"]["webhook-id"])
    return counts


def read(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as file:
        return [json.loads(text) for text in file if text.strip()]


def main(argv: list[str]) -> int:
    paths = [arg for arg in argv if not arg.startswith("--")]
    if len(paths) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    counts = verify_lines(read(paths[0]))
    answers = ", ".join(f"{n} answered {answer}" for answer, n in sorted(counts.verified_by_answer.items()))
    print(
        f"verified {counts.verified} of {counts.requests} requests ({answers}; "
        f"{len(counts.delivered_ids)} status changes delivered), failed {counts.failed}"
    )
    for failure, n in counts.failures.most_common():
        print(f"failed ×{n}: {failure}")
    if "--json" in argv:
        print(json.dumps(counts.summary()))
    return 0 if counts.failed == 0 and counts.requests > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
