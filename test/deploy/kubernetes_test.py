#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Checks the Kubernetes manifests in deploy/kubernetes/ without a cluster: for every pod each
# manifest would start, renders the TF_CONFIG that pod gets (the StatefulSet's entry point
# script, run as the pod would run it; the TFJob's, by the training operator's rule), has dsgd
# read it (tf_config_check, built from test/deploy/), and checks that dsgd accepts it, that every
# pod derives the same cluster, and that the pods cover each task exactly once.
#   kubernetes_test.py TF_CONFIG_CHECK DEPLOY_DIR
# Prints "N passed, M failed" and exits 1 on any failure.
import json
import os
import subprocess
import sys

import yaml

checker, deploy = sys.argv[1], sys.argv[2]
script = os.path.join(deploy, "kubernetes", "tf_config_from_pod.sh")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what)


def dsgd_reads(tf_config):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "SLURM_"))}
    env["TF_CONFIG"] = tf_config
    r = subprocess.run([checker], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, r.stderr.strip()
    fields = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    return fields, ""


def literal_env(container, pod_name, namespace):
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
            env[e["name"]] = pod_name
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[e["name"]] = namespace
    return env


def check_pods(kind, pods):
    """pods: list of (pod name, TF_CONFIG or None, error). Checks acceptance, one cluster, all tasks."""
    clusters, tasks, chiefs = set(), [], 0
    for name, tf_config, err in pods:
        check(tf_config is not None, f"{kind}: {name} got no TF_CONFIG ({err})")
        if tf_config is None:
            continue
        fields, err = dsgd_reads(tf_config)
        check(fields is not None, f"{kind}: dsgd refused {name}'s TF_CONFIG {tf_config}: {err}")
        if fields is None:
            continue
        check(fields["source"] == "TF_CONFIG", f"{kind}: {name}: role from {fields['source']}")
        clusters.add(fields["cluster"])
        tasks.append(fields["task"])
        chiefs += int(fields["chief"])
    check(len(clusters) == 1, f"{kind}: the pods derived {len(clusters)} different clusters: {clusters}")
    if len(clusters) == 1:
        cluster = json.loads(next(iter(clusters)))
        expected = sorted(f"{job}:{i}" for job, addresses in cluster.items() for i in range(len(addresses)))
        check(sorted(tasks) == expected, f"{kind}: pods are tasks {sorted(tasks)}, the cluster has {expected}")
    check(chiefs == 1, f"{kind}: {chiefs} pods are the chief, expected 1")
    return clusters


def statefulset_manifest():
    docs = [d for d in yaml.safe_load_all(open(os.path.join(deploy, "kubernetes", "statefulset.yaml"))) if d]
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    sets = [d for d in docs if d["kind"] == "StatefulSet"]
    check(len(sets) == 2, f"statefulset.yaml: {len(sets)} StatefulSets, expected ps and worker")
    pods = []
    for s in sets:
        name, replicas = s["metadata"]["name"], s["spec"]["replicas"]
        svc = services.get(s["spec"]["serviceName"])
        check(svc is not None and svc["spec"].get("clusterIP") == "None",
              f"{name}: its serviceName {s['spec']['serviceName']} is no headless Service of the manifest")
        check(svc is not None and svc["spec"].get("publishNotReadyAddresses") is True,
              f"{name}: its Service must publish not-ready addresses (tasks dial each other before readiness)")
        container = s["spec"]["template"]["spec"]["containers"][0]
        check(container["command"][0].endswith("tf_config_from_pod.sh"), f"{name}: entry point is not tf_config_from_pod.sh")
        token = [e for e in container.get("env", []) if e["name"] == "DSGD_CLUSTER_TOKEN"]
        check(bool(token) and "secretKeyRef" in token[0].get("valueFrom", {}), f"{name}: the token is not from a Secret")
        env0 = literal_env(container, f"{name}-0", "training")
        job = env0.get("DSGD_JOB", "")
        sizes = f"DSGD_{job.upper()}_REPLICAS"
        slots = int(env0.get(sizes, -1))
        # Elastic workers: the spec names DSGD_WORKER_REPLICAS slots (MAX) and the worker
        # StatefulSet may run anywhere from DSGD_MIN_REPLICAS (MIN) to them; else exactly them.
        minimum = env0.get("DSGD_MIN_REPLICAS")
        if job == "worker" and minimum is not None:
            check(1 <= int(minimum) <= replicas <= slots,
                  f"{name}: replicas {replicas} outside DSGD_MIN_REPLICAS={minimum} .. {sizes}={slots}")
        else:
            check(replicas == slots, f"{name}: replicas {replicas} but {sizes}={env0.get(sizes)}")
        for other in sets:
            # Every pod derives the same spec and range: both sets carry the same sizes.
            theirs = literal_env(other["spec"]["template"]["spec"]["containers"][0], "x", "training")
            for n in ("DSGD_PS_REPLICAS", "DSGD_WORKER_REPLICAS", "DSGD_MIN_REPLICAS"):
                check(env0.get(n) == theirs.get(n),
                      f"{name}: {n}={env0.get(n)} but {other['metadata']['name']} has {theirs.get(n)}")
        check(any(p["containerPort"] == int(env0.get("DSGD_PORT", 2222)) for p in container["ports"]),
              f"{name}: DSGD_PORT is not a container port")
        # Every pod the set may have (scaled up to its slots): a pod's TF_CONFIG does not depend on
        # how many run, so scaling changes no running pod's cluster.
        for ordinal in range(slots):
            pod = f"{name}-{ordinal}"
            env = dict(os.environ, **literal_env(container, pod, "training"))
            r = subprocess.run(["sh", script, "--print"], env=env, capture_output=True, text=True, timeout=30)
            pods.append((pod, r.stdout.strip() if r.returncode == 0 else None, r.stderr.strip()))
        # A pod beyond the slots (scaled past MAX) is refused, naming the limit.
        env = dict(os.environ, **literal_env(container, f"{name}-{slots}", "training"))
        r = subprocess.run(["sh", script, "--print"], env=env, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and f"ordinal {slots} is beyond the {slots} {job} tasks" in r.stderr,
              f"{name}-{slots}: a pod beyond the spec's tasks was not refused: {r.stderr}")
        if minimum is not None:
            # The program (and so the ps) gets the range's MIN.
            env = dict(os.environ, **literal_env(container, f"{name}-0", "training"))
            env.pop("DSGD_HOLD_AFTER_EXIT", None)
            r = subprocess.run(["sh", script, "sh", "-c", "echo min=$DSGD_MIN_REPLICAS"], env=env, capture_output=True,
                               text=True, timeout=30)
            check(r.stdout.strip() == f"min={minimum}", f"{name}: the program saw {r.stdout.strip()!r}, {r.stderr}")
    clusters = check_pods("statefulset", pods)
    if len(clusters) == 1:
        cluster = json.loads(next(iter(clusters)))
        check(cluster["ps"][1] == "dsgd-ps-1.dsgd-ps.training.svc.cluster.local:2222",
              f"statefulset: ps:1 is at {cluster['ps'][1]}, not its pod's DNS name")
    # The entry point refuses a pod name that is not of its StatefulSet, naming it.
    bad = dict(os.environ, POD_NAME="other-7", POD_NAMESPACE="training", DSGD_NAME="dsgd", DSGD_JOB="ps",
               DSGD_PS_REPLICAS="2", DSGD_WORKER_REPLICAS="2")
    r = subprocess.run(["sh", script, "--print"], env=bad, capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "POD_NAME=other-7" in r.stderr, f"a foreign pod name was not refused: {r.stderr}")


def tfjob_manifest():
    job = yaml.safe_load(open(os.path.join(deploy, "kubernetes", "tfjob.yaml")))
    name, namespace = job["metadata"]["name"], "training"
    specs = job["spec"]["tfReplicaSpecs"]
    # The training operator's rule (kubeflow/training-operator, TFJob v1): task i of replica type
    # T is "<job>-<t>-<i>.<namespace>.svc:<port>", t = T in lower case, port the container port
    # named tfjob-port of the container named tensorflow; task type t, environment "cloud".
    cluster = {}
    for rtype, spec in specs.items():
        containers = [c for c in spec["template"]["spec"]["containers"] if c["name"] == "tensorflow"]
        check(len(containers) == 1, f"tfjob {rtype}: no container named tensorflow")
        ports = [p["containerPort"] for p in containers[0].get("ports", []) if p.get("name") == "tfjob-port"]
        check(len(ports) == 1, f"tfjob {rtype}: no container port named tfjob-port")
        t = rtype.lower()
        cluster[t] = [f"{name}-{t}-{i}.{namespace}.svc:{ports[0] if ports else 2222}" for i in range(spec["replicas"])]
        check(spec.get("restartPolicy") in ("OnFailure", "Always", "ExitCode"),
              f"tfjob {rtype}: restartPolicy {spec.get('restartPolicy')} restarts nothing")
    pods = [(f"{name}-{t}-{i}", json.dumps({"cluster": cluster, "task": {"type": t, "index": i}, "environment": "cloud"}), "")
            for t, addresses in cluster.items() for i in range(len(addresses))]
    check_pods("tfjob", pods)


statefulset_manifest()
tfjob_manifest()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
