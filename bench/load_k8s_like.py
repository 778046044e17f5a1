#!/usr/bin/env python3
"""Load Kubernetes-like objects into etcd through its grpc-gateway JSON API.

Keys look like /registry/<resource>/<namespace>/<name>; values are JSON
documents shaped like pods, configmaps, events, services and endpoints slices
(repeated field names, random UIDs / timestamps / IPs / digests, ~1-2 KB each).

Writes go through POST /v3/kv/txn with up to --ops-per-txn puts per request
(etcd's default --max-txn-ops is 128) from --threads concurrent connections.
Loading stops once etcd's reported dbSize reaches --target-mb.

Key indices start at --start so a second invocation can continue where the
first one left off; the next free index is printed on stdout as
`next_index=<N>` (status lines go to stderr).

With --cacert (and --cert/--key for client-certificate auth) it speaks HTTPS, as to a member
etcdadm made.

Standard library only.
"""

import argparse
import base64
import http.client
import json
import random
import ssl
import sys
import threading
import time
import uuid

NAMESPACES = [
    "default", "kube-system", "monitoring", "ingress-nginx", "cert-manager",
    "payments", "checkout", "search", "recommendations", "billing",
    "identity", "logging", "data-pipeline", "ml-serving", "frontend",
]
APPS = [
    "api-gateway", "cart", "catalog", "inventory", "orders", "auth", "profile",
    "notifications", "ledger", "fraud-check", "indexer", "ranker", "web",
    "worker", "scheduler", "exporter", "fluent-bit", "coredns", "redis", "kafka",
]
REASONS = [
    ("Scheduled", "Normal", "Successfully assigned {ns}/{name} to {node}"),
    ("Pulling", "Normal", "Pulling image \"{image}\""),
    ("Pulled", "Normal", "Successfully pulled image \"{image}\" in {ms}ms"),
    ("Created", "Normal", "Created container {app}"),
    ("Started", "Normal", "Started container {app}"),
    ("BackOff", "Warning", "Back-off restarting failed container {app} in pod {name}"),
    ("Unhealthy", "Warning", "Readiness probe failed: HTTP probe failed with statuscode: 503"),
    ("Killing", "Normal", "Stopping container {app}"),
]


def rand_hex(rng, n):
    return "%0*x" % (n, rng.getrandbits(4 * n))


def ts(rng):
    t = 1700000000 + rng.randrange(0, 30 * 86400)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def ip(rng):
    return "10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))


def meta(rng, kind_name, ns, name, app, rv):
    return {
        "name": name,
        "namespace": ns,
        "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "resourceVersion": str(rv),
        "creationTimestamp": ts(rng),
        "labels": {
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/part-of": ns,
            "app.kubernetes.io/managed-by": "Helm",
            "pod-template-hash": rand_hex(rng, 10),
        },
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration-hash": rand_hex(rng, 16),
        },
    }


def pod(rng, ns, name, app, rv):
    node = "ip-%s.ec2.internal" % ip(rng).replace(".", "-")
    image = "registry.example.com/%s/%s@sha256:%s" % (ns, app, rand_hex(rng, 64))
    m = meta(rng, "Pod", ns, name, app, rv)
    m["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name.rsplit("-", 1)[0],
        "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "controller": True, "blockOwnerDeletion": True,
    }]
    return {
        "kind": "Pod", "apiVersion": "v1", "metadata": m,
        "spec": {
            "containers": [{
                "name": app, "image": image,
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "LOG_LEVEL", "value": rng.choice(["info", "debug", "warn"])}],
                "resources": {"limits": {"cpu": "%dm" % rng.choice([250, 500, 1000]), "memory": "%dMi" % rng.choice([256, 512, 1024])},
                              "requests": {"cpu": "100m", "memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                                   "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": app, "nodeName": node,
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "hostIP": ip(rng), "podIP": ip(rng), "startTime": ts(rng),
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": ts(rng)}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{
                "name": app, "ready": True, "restartCount": rng.randrange(0, 4), "image": image,
                "containerID": "containerd://" + rand_hex(rng, 64),
                "state": {"running": {"startedAt": ts(rng)}},
            }],
            "qosClass": "Burstable",
        },
    }


def configmap(rng, ns, name, app, rv):
    data = {
        "app.properties": "\n".join("%s.%s=%s" % (app, k, rng.choice(["true", "false", str(rng.randrange(1000)), rand_hex(rng, 8)]))
                                    for k in ("timeout", "retries", "pool.size", "cache.ttl", "feature.flag", "shard", "region", "tracing.sample")),
        "LOG_FORMAT": "json",
        "UPSTREAM_URL": "http://%s.%s.svc.cluster.local:8080" % (rng.choice(APPS), ns),
        "checksum": rand_hex(rng, 64),
    }
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta(rng, "ConfigMap", ns, name, app, rv), "data": data}


def event(rng, ns, name, app, rv):
    reason, typ, msg = rng.choice(REASONS)
    image = "registry.example.com/%s/%s:v1.%d.%d" % (ns, app, rng.randrange(40), rng.randrange(20))
    node = "ip-%s.ec2.internal" % ip(rng).replace(".", "-")
    pod_name = name.rsplit(".", 1)[0]
    m = meta(rng, "Event", ns, name, app, rv)
    return {
        "kind": "Event", "apiVersion": "v1", "metadata": m,
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": pod_name,
                           "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                           "apiVersion": "v1", "resourceVersion": str(rv - rng.randrange(1, 500)),
                           "fieldPath": "spec.containers{%s}" % app},
        "reason": reason,
        "message": msg.format(ns=ns, name=pod_name, node=node, image=image, app=app, ms=rng.randrange(200, 9000)),
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": ts(rng), "lastTimestamp": ts(rng), "count": rng.randrange(1, 50),
        "type": typ, "eventTime": None, "reportingComponent": "kubelet", "reportingInstance": node,
    }


def service(rng, ns, name, app, rv):
    return {
        "kind": "Service", "apiVersion": "v1", "metadata": meta(rng, "Service", ns, name, app, rv),
        "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                           {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090}],
                 "selector": {"app.kubernetes.io/name": app}, "clusterIP": ip(rng), "clusterIPs": [ip(rng)],
                 "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
                 "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"},
        "status": {"loadBalancer": {}},
    }


def endpointslice(rng, ns, name, app, rv):
    return {
        "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
        "metadata": meta(rng, "EndpointSlice", ns, name, app, rv), "addressType": "IPv4",
        "endpoints": [{"addresses": [ip(rng)], "conditions": {"ready": True, "serving": True, "terminating": False},
                       "nodeName": "ip-%s.ec2.internal" % ip(rng).replace(".", "-"),
                       "targetRef": {"kind": "Pod", "namespace": ns, "name": "%s-%s" % (app, rand_hex(rng, 5)),
                                     "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4))}}
                      for _ in range(rng.randrange(2, 5))],
        "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
    }


# (resource, generator, weight, name suffix style)
KINDS = [
    ("pods", pod, 40),
    ("events", event, 25),
    ("configmaps", configmap, 15),
    ("endpointslices", endpointslice, 10),
    ("services/specs", service, 10),
]
KIND_TABLE = [k for k in KINDS for _ in range(k[2])]


def make_kv(i):
    rng = random.Random(i * 7919 + 17)
    resource, gen, _ = KIND_TABLE[rng.randrange(len(KIND_TABLE))]
    ns = rng.choice(NAMESPACES)
    app = rng.choice(APPS)
    if resource == "events":
        name = "%s-%s-%s.%s" % (app, rand_hex(rng, 10), rand_hex(rng, 5), rand_hex(rng, 16))
    else:
        name = "%s-%s-%06d" % (app, rand_hex(rng, 5), i)
    key = "/registry/%s/%s/%s" % (resource, ns, name)
    value = json.dumps(gen(rng, ns, name, app, 100000 + i), separators=(",", ":"))
    return key.encode(), value.encode()


def b64(b):
    return base64.b64encode(b).decode("ascii")


TLS = None  # an ssl.SSLContext when --cacert is given


class Client:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conn = None

    def connect(self):
        if TLS is None:
            return http.client.HTTPConnection(self.host, self.port, timeout=60)
        return http.client.HTTPSConnection(self.host, self.port, timeout=60, context=TLS)

    def post(self, path, body):
        for attempt in range(5):
            try:
                if self.conn is None:
                    self.conn = self.connect()
                self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.status != 200:
                    raise RuntimeError("HTTP %d from %s: %s" % (resp.status, path, data[:300]))
                return json.loads(data)
            except (OSError, http.client.HTTPException) as e:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))


def db_size(client):
    st = client.post("/v3/maintenance/status", b"{}")
    return int(st.get("dbSize", 0)), int(st.get("dbSizeInUse", st.get("dbSize", 0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoint", default="127.0.0.1:2379", help="host:port of etcd's client URL")
    ap.add_argument("--target-mb", type=float, required=True, help="stop when etcd dbSize >= this many MiB")
    ap.add_argument("--start", type=int, default=0, help="first key index (continue a previous load)")
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--ops-per-txn", type=int, default=128)
    ap.add_argument("--check-every", type=int, default=8, help="txns between dbSize checks")
    ap.add_argument("--cacert", help="HTTPS: the CA certificate the server's is checked against")
    ap.add_argument("--cert", help="HTTPS: client certificate (with --key)")
    ap.add_argument("--key", help="HTTPS: client key")
    args = ap.parse_args()
    if args.cacert:
        global TLS
        TLS = ssl.create_default_context(cafile=args.cacert)
        if args.cert:
            TLS.load_cert_chain(args.cert, args.key)

    host, port = args.endpoint.rsplit(":", 1)
    port = int(port)
    target = int(args.target_mb * 1024 * 1024)
    status_client = Client(host, port)
    size, _ = db_size(status_client)
    if size >= target:
        print("dbSize %.1f MiB already >= target" % (size / 1048576.0), file=sys.stderr)
        print("next_index=%d" % args.start)
        return

    lock = threading.Lock()
    state = {"next": args.start, "done": False, "txns": 0, "bytes": 0, "error": None}
    t0 = time.time()

    def worker():
        c = Client(host, port)
        while True:
            with lock:
                if state["done"] or state["error"]:
                    return
                first = state["next"]
                state["next"] += args.ops_per_txn
            ops = []
            nbytes = 0
            for i in range(first, first + args.ops_per_txn):
                k, v = make_kv(i)
                nbytes += len(k) + len(v)
                ops.append({"requestPut": {"key": b64(k), "value": b64(v)}})
            body = json.dumps({"success": ops}).encode()
            try:
                c.post("/v3/kv/txn", body)
            except Exception as e:  # surface the first error and stop everyone
                with lock:
                    state["error"] = e
                return
            check = False
            with lock:
                state["txns"] += 1
                state["bytes"] += nbytes
                if state["txns"] % args.check_every == 0:
                    check = True
            if check:
                size, _ = db_size(c)
                el = time.time() - t0
                print("  loaded %d keys, %.0f MiB of kv, dbSize %.1f MiB, %.0fs" %
                      (state["next"] - args.start, state["bytes"] / 1048576.0, size / 1048576.0, el), file=sys.stderr)
                if size >= target:
                    with lock:
                        state["done"] = True

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if state["error"]:
        print("load failed: %s" % state["error"], file=sys.stderr)
        sys.exit(1)
    size, _ = db_size(status_client)
    n = state["next"] - args.start
    el = time.time() - t0
    print("loaded %d keys (avg value+key %.0f B) in %.1fs; dbSize %.1f MiB" %
          (n, state["bytes"] / max(1, n), el, size / 1048576.0), file=sys.stderr)
    print("next_index=%d" % state["next"])


if __name__ == "__main__":
    main()
