#!/usr/bin/env python3
"""Waits until a cluster serves, asking every 50 ms, and prints when it first did.

"Serves" means: every endpoint's /health says true, the member list (asked of the first endpoint)
holds exactly --members started voters, and the first endpoint's revision is past --after-revision.
With --quorum, one endpoint whose /health says true is enough (etcd answers it with a leader and a
linearizable read: a quorum serves), and the member list and revision are asked of that one.
Each try opens fresh TLS connections with a 1 s timeout, so that no client backoff (etcdctl's, a
gRPC channel's) delays the moment it is seen, and no process is started per try: the time printed
is within one try (~10-50 ms) of the moment the cluster was first found serving.

Prints `served_unix_ns=<ns>` on stdout; exits 1 if it has not served within --timeout seconds.

  serving_probe.py --endpoint https://127.0.0.1:2379 [--endpoint ...] --cacert ca.crt --cert c.crt --key c.key \
      [--members 3] [--after-revision 0] [--timeout 900] [--quorum]
"""
import argparse
import json
import ssl
import sys
import time
import urllib.request


def ask(ctx, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, context=ctx, timeout=1) as resp:
        return json.load(resp)


def healthy(ctx, endpoint):
    try:
        return ask(ctx, endpoint + "/health").get("health") == "true"
    except (OSError, ValueError):
        return False


def serving(ctx, endpoints, members, after, quorum):
    if quorum:
        endpoints = [e for e in endpoints if healthy(ctx, e)][:1]
        if not endpoints:
            return False
    else:
        for e in endpoints:
            if ask(ctx, e + "/health").get("health") != "true":
                return False
    listed = ask(ctx, endpoints[0] + "/v3/cluster/member/list", {}).get("members", [])
    if len(listed) != members or not all(m.get("name") and not m.get("isLearner") for m in listed):
        return False
    status = ask(ctx, endpoints[0] + "/v3/maintenance/status", {})
    return int(status.get("header", {}).get("revision", 0)) > after


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", action="append", required=True)
    p.add_argument("--cacert", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--after-revision", type=int, default=0)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--quorum", action="store_true", help="one healthy endpoint is enough")
    a = p.parse_args()
    ctx = ssl.create_default_context(cafile=a.cacert)
    ctx.check_hostname = False
    ctx.load_cert_chain(a.cert, a.key)
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        try:
            if serving(ctx, a.endpoint, a.members, a.after_revision, a.quorum):
                print("served_unix_ns=%d" % time.time_ns())
                return 0
        except (OSError, ValueError):  # refused, reset, timed out, not JSON yet
            pass
        time.sleep(0.05)
    return 1


if __name__ == "__main__":
    sys.exit(main())
