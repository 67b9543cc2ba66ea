#!/usr/bin/env python3
"""Multi-process tests of the tuning farm (issue 5).

Real processes on loopback: one `iosfarm-server` with a real SQLite file,
several `iosfarm-worker --backend sim` daemons, and the `iosfarm` CLI. The
sim backend sleeps in proportion to its simulated device time
(--sim-time-scale), so phases take real wall time and overlap the way they do
on GPUs. Workers and the server are killed with SIGKILL and restarted.

Invariants are checked from the server's timeline (GetTimeline):
  - no resource (in particular no GPU) ever runs two phases at once;
  - a job submitted with --max-parallel-batches 1 runs one phase at a time,
    in order; the others run each batch's phases in order and their server
    phases one at a time (check_timeline);
  - with several jobs, phases of different jobs overlap (interleaving).

Usage: farm_cluster_test.py BUILD_DIR [unittest args]
"""
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = None  # set in main

SERVER = "server/iosfarm-server"
WORKER = "worker/iosfarm-worker"
CLI = "client/iosfarm"
EPS = 1e-6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Farm:
    """A server, its workers and a CLI bound to one temp directory."""

    def __init__(self, tmp, policy="interleaved"):
        self.tmp = tmp
        self.db = os.path.join(tmp, "farm.db")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.policy = policy
        self.server = None
        self.workers = {}
        self.logs = []
        self.cli_env = {}  # extra environment of CLI calls (token, CA)

    def _log(self, name):
        path = os.path.join(self.tmp, name + ".log")
        self.logs.append(path)
        return open(path, "ab")

    def start_server(self, *extra):
        cmd = [os.path.join(BUILD, SERVER), "--db", self.db, "--listen", self.address,
               "--policy", self.policy, "--heartbeat-timeout", "3", *extra]
        with self._log("server") as log:
            self.server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError("server exited: " + self.tail())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not listen: " + self.tail())

    def start_worker(self, worker_id, device_key, time_scale=20.0, *extra):
        cmd = [os.path.join(BUILD, WORKER), "--server", self.address,
               "--device-key", device_key, "--backend", "sim", "--worker-id", worker_id,
               "--sim-time-scale", str(time_scale), "--reconnect-max", "0.5", *extra]
        with self._log("worker-" + worker_id) as log:
            self.workers[worker_id] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def wait_workers(self, count, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            workers = self.cli_json("workers")["workers"]
            if len(workers) >= count:
                return workers
            time.sleep(0.1)
        raise AssertionError(f"{count} workers did not register: " + self.tail())

    def kill_server(self):
        self.server.send_signal(signal.SIGKILL)
        self.server.wait()

    def kill_worker(self, worker_id):
        self.workers[worker_id].send_signal(signal.SIGKILL)
        self.workers[worker_id].wait()

    def stop(self):
        procs = list(self.workers.values()) + ([self.server] if self.server else [])
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def cli(self, *args, check=True):
        env = dict(os.environ, IOSFARM_SERVER=self.address, **self.cli_env)
        r = subprocess.run([os.path.join(BUILD, CLI), *args], env=env, capture_output=True,
                           text=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"iosfarm {' '.join(args)} failed ({r.returncode}): "
                                 f"{r.stderr}\n{self.tail()}")
        return r

    def cli_json(self, *args):
        return json.loads(self.cli(*args, "--format", "json").stdout)

    def submit(self, model, device, *extra):
        return self.cli_json("submit", model, "--device", device, *extra)["job"]["id"]

    def wait_jobs(self, ids, timeout=240):
        deadline = time.time() + timeout
        while time.time() < deadline:
            jobs = {j["id"]: j for j in self.cli_json("list")["jobs"]}
            if all(jobs[i]["state"] in ("succeeded", "failed", "cancelled") for i in ids):
                return jobs
            time.sleep(0.2)
        raise AssertionError("jobs did not finish in time: " + self.tail())

    def timeline(self, job=None):
        args = ["timeline"] + ([str(job)] if job else [])
        return self.cli_json(*args)["phases"]

    def tail(self):
        out = []
        for path in self.logs:
            with open(path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()[-15:]
            out.append(f"--- {os.path.basename(path)}\n" + "\n".join(lines))
        return "\n".join(out)


def overlaps(a, b):
    return a["start_s"] < b["end_s"] - EPS and b["start_s"] < a["end_s"] - EPS


def no_overlaps(test, ps, what):
    ps = sorted(ps, key=lambda p: p["start_s"])
    for a, b in zip(ps, ps[1:]):
        test.assertFalse(overlaps(a, b), f"{what} ran two phases at once: {a} {b}")


def check_ok_order(test, what, ok, allowed, restarted):
    for prev, nxt in zip(ok, ok[1:]):
        after = set(allowed[prev])
        if restarted:  # a restarted server resumes from enumerate, batches anew
            after |= {"enumerate", "build"}
        test.assertIn(nxt, after, f"{what}: {prev} then {nxt} in {ok}")


def check_timeline(test, phases, restarted=False, serial=(), caps=None, unfinished=()):
    """The timeline's invariants. Jobs in `serial` (submitted with
    --max-parallel-batches 1) run one phase at a time, in order; the others
    may have several batches out: their server phases (enumerate, update) run
    one at a time, each batch's build, profile and update in order, the
    measure after everything else, and (with `caps`: job -> P) never more
    than P of their builds and profiles at once. Jobs in `unfinished` are
    still running: all of that but their measure."""
    by_resource, by_job = {}, {}
    for p in phases:
        test.assertLessEqual(p["queued_s"], p["start_s"] + EPS, p)
        test.assertLessEqual(p["start_s"], p["end_s"] + EPS, p)
        test.assertIn(p["outcome"], ("ok", "failed", "worker_lost", "cancelled"), p)
        by_resource.setdefault(p["resource"], []).append(p)
        by_job.setdefault(p["job_id"], []).append(p)
    for resource, ps in by_resource.items():
        no_overlaps(test, ps, resource)
    for job, ps in by_job.items():
        ps.sort(key=lambda p: p["start_s"])
        ok = [p["phase"] for p in ps if p["outcome"] == "ok"]
        test.assertEqual(ok[0], "enumerate", f"job {job} did not start with enumerate: {ok}")
        if job not in unfinished:
            test.assertEqual(ok[-1], "measure", f"job {job} did not end with measure: {ok}")
        if job in serial:
            no_overlaps(test, ps, f"job {job}")
            allowed = {"enumerate": {"build", "measure", "enumerate"},
                       "build": {"profile", "build"}, "profile": {"update"},
                       "update": {"enumerate"}, "measure": set()}
            check_ok_order(test, f"job {job}", ok, allowed, restarted)
            continue
        no_overlaps(test, [p for p in ps if p["phase"] in ("enumerate", "update")],
                    f"job {job} (its server phases)")
        batches = {}
        for p in ps:
            if p["phase"] in ("build", "profile", "update"):
                test.assertGreater(p["batch"], 0, p)
                batches.setdefault(p["batch"], []).append(p)
        for batch, bps in batches.items():
            no_overlaps(test, bps, f"job {job} batch {batch}")
            allowed = {"build": {"profile", "build"}, "profile": {"update", "build"},
                       "update": set()}
            check_ok_order(test, f"job {job} batch {batch}",
                           [p["phase"] for p in bps if p["outcome"] == "ok"], allowed, restarted)
        measures = [p for p in ps if p["phase"] == "measure" and p["outcome"] == "ok"]
        for p in ps:
            if measures and p["phase"] != "measure":
                test.assertLessEqual(p["end_s"], measures[-1]["start_s"] + EPS,
                                     f"job {job}: {p} ended after its measure started")
        if caps and job in caps:
            events = sorted([(p["start_s"], 1) for p in ps if p["phase"] in ("build", "profile")] +
                            [(p["end_s"] - EPS, -1) for p in ps
                             if p["phase"] in ("build", "profile")])
            running = 0
            for _, change in events:
                running += change
                test.assertLessEqual(running, caps[job], f"job {job}: more than "
                                     f"{caps[job]} builds and profiles at once")


def interleaved(phases):
    """True when phases of two different jobs were in flight at the same time."""
    ps = sorted(phases, key=lambda p: p["start_s"])
    for i, a in enumerate(ps):
        for b in ps[i + 1:]:
            if b["start_s"] >= a["end_s"]:
                break
            if a["job_id"] != b["job_id"] and overlaps(a, b):
                return True
    return False


def check_measured_once(test, farm, phases, device_key, lost_at_most=0):
    """Every stage the timeline's ok profiles measured is stored once for
    `device_key`, and the database ignored no measurement (none twice).
    `lost_at_most`: stages of ok profiles a server kill may have lost before
    their update stored them (measured again after the restart)."""
    db = sqlite3.connect(farm.db)
    rows = db.execute("SELECT COUNT(*) FROM latencies WHERE device_key=?",
                      (device_key,)).fetchone()[0]
    ignored = db.execute("SELECT ignored_measurements FROM devices WHERE key=?",
                         (device_key,)).fetchone()[0]
    profiled = sum(p["stages"] for p in phases if p["phase"] == "profile" and
                   p["outcome"] == "ok")
    test.assertEqual(ignored, 0)
    test.assertGreaterEqual(profiled, rows)
    test.assertLessEqual(profiled - rows, lost_at_most)


def schedule_stages(farm, job):
    out = farm.cli_json("result", str(job))
    schedule = out["result"]["schedule"]
    return [(s["strategy"], [[op for op in g] for g in s["groups"]])
            for block in schedule["blocks"] for s in block["stages"]]


class FarmTestBase(unittest.TestCase):
    """Temp directory per test; farms are stopped and logs kept on failure."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="iosfarm-cluster-")
        self.farms = []

    def tearDown(self):
        for farm in self.farms:
            farm.stop()
        if not self.failed():
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print("logs kept in", self.tmp, file=sys.stderr)

    def failed(self):
        outcome = getattr(self, "_outcome", None)
        errors = getattr(outcome, "errors", None) or []
        result = getattr(outcome, "result", None)
        if result is not None:
            errors = list(errors) + list(getattr(result, "failures", [])) + list(
                getattr(result, "errors", []))
        return any(e for _, e in errors if e)

    def farm(self, name, policy="interleaved"):
        path = os.path.join(self.tmp, name)
        os.makedirs(path)
        f = Farm(path, policy)
        self.farms.append(f)
        return f


class FarmClusterTest(FarmTestBase):

    def test_eight_concurrent_jobs_three_workers_two_keys(self):
        farm = self.farm("eight")
        farm.start_server()
        farm.start_worker("a1", "sim-a")
        farm.start_worker("a2", "sim-a")
        farm.start_worker("b1", "sim-b")
        farm.wait_workers(3)
        specs = [("squeezenet", "sim-a", "1"), ("resnet50", "sim-a", "1"),
                 ("squeezenet", "sim-b", "1"), ("resnet50", "sim-b", "1"),
                 ("squeezenet", "sim-a", "2"), ("resnet50", "sim-a", "2"),
                 ("squeezenet", "sim-b", "4"), ("squeezenet", "sim-a", "8")]
        # The first two run one batch at a time, the others as many as their
        # key has idle GPUs (the default).
        ids = [farm.submit(m, d, "--batch", b, *(("--max-parallel-batches", "1") if n < 2 else ()))
               for n, (m, d, b) in enumerate(specs)]
        jobs = farm.wait_jobs(ids)
        for i in ids:
            self.assertEqual(jobs[i]["state"], "succeeded", jobs[i])
        phases = farm.timeline()
        check_timeline(self, phases, serial=ids[:2])
        self.assertTrue(interleaved(phases), "no two jobs ever had phases in flight together")
        # Profiles went only to workers of the job's key.
        key_of = {i: d for i, (_, d, _) in zip(ids, specs)}
        for p in phases:
            if p["phase"] in ("build", "profile", "measure"):
                self.assertTrue(p["worker"].startswith(key_of[p["job_id"]][-1]), p)
        # Both sim-a workers did profile work.
        gpus = {p["resource"] for p in phases if p["phase"] == "profile"}
        self.assertTrue({"a1/gpu", "a2/gpu", "b1/gpu"} <= gpus, gpus)
        for i in ids:
            result = farm.cli_json("result", str(i))["result"]
            names = [m["name"] for m in result["measured"]]
            self.assertEqual(names, ["ios", "sequential", "greedy"])

    def calm_schedule(self, name, device, time_scale, model, *extra):
        """The schedule of an undisturbed run of the job on one worker."""
        calm = self.farm(name)
        calm.start_server()
        calm.start_worker("c1", device, time_scale)
        calm.wait_workers(1)
        job = calm.submit(model, device, *extra)
        self.assertEqual(calm.wait_jobs([job])[job]["state"], "succeeded")
        return schedule_stages(calm, job)

    def test_worker_killed_during_profile_gives_same_schedule(self):
        expected = self.calm_schedule("calm", "sim-k", 5.0, "resnet50", "--batch", "2")

        # The killed run's simulated GPU runs 4x slower than the calm one's (the
        # measured latencies are the same): its shortest profile phases last
        # about 0.2 s, so the kill below lands inside the phase it saw even when
        # a loaded machine takes a while to run the CLI.
        farm = self.farm("kill-worker")
        farm.start_server()
        farm.start_worker("k1", "sim-k", 20.0)
        farm.start_worker("k2", "sim-k", 20.0)
        farm.wait_workers(2)
        job = farm.submit("resnet50", "sim-k", "--batch", "2")
        victim = None
        deadline = time.time() + 60
        while victim is None and time.time() < deadline:
            for w in farm.cli_json("workers")["workers"]:
                if w["state"] == "profile":
                    victim = w["id"]
            time.sleep(0.02)
        self.assertIsNotNone(victim, "no worker was ever seen profiling")
        farm.kill_worker(victim)
        jobs = farm.wait_jobs([job])
        self.assertEqual(jobs[job]["state"], "succeeded", jobs[job])
        phases = farm.timeline(job)
        check_timeline(self, phases)
        lost = [p for p in phases if p["outcome"] == "worker_lost"]
        self.assertTrue(lost, "the killed worker's phase was not recorded as lost")
        self.assertEqual(schedule_stages(farm, job), expected)

    def test_one_job_spreads_its_batches_over_the_workers_of_its_key(self):
        # Issue 17: one job, four workers, up to four batches out at once; a
        # worker killed while it profiles one of them costs that batch only.
        expected = self.calm_schedule("calm-parallel", "sim-p", 10.0, "inception_v3",
                                      "--max-parallel-batches", "1")

        farm = self.farm("parallel")
        farm.start_server()
        for w in ("p1", "p2", "p3", "p4"):
            farm.start_worker(w, "sim-p", 20.0)
        farm.wait_workers(4)
        job = farm.submit("inception_v3", "sim-p", "--max-parallel-batches", "4")
        # Kill a worker once two of the job's profiles run at once; the job's
        # status says how many batches it has out and on which workers. A
        # worker seen profiling may finish its phase (a batch of a few stages
        # lasts a tenth of a second) before a loaded machine kills it: then
        # no phase was lost, and another worker seen profiling is killed (two
        # at most, two are left).
        victims, lost, progress = [], [], None
        deadline = time.time() + 90
        while not lost and len(victims) < 2 and time.time() < deadline:
            status = farm.cli_json("status", str(job))["job"]
            if status["state"] != "running":
                break
            if progress is None or status["progress"]["batches_out"] > progress["batches_out"]:
                progress = status["progress"]
            profiling = [w["id"] for w in farm.cli_json("workers")["workers"]
                         if w["state"] == "profile" and w["id"] not in victims]
            if len(profiling) >= 2:
                victims.append(profiling[-1])
                farm.kill_worker(victims[-1])
                end = time.time() + 5  # the server sees the stream close at once
                while not lost and time.time() < end:
                    lost = [p for p in farm.timeline(job) if p["outcome"] == "worker_lost"]
                    time.sleep(0.1)
            time.sleep(0.02)
        self.assertTrue(victims, "two profiles of the job never ran at once")
        self.assertTrue(lost, f"no phase of {victims} was lost: each had ended before its kill")
        self.assertEqual(progress["max_parallel_batches"], 4, progress)
        self.assertGreaterEqual(progress["batches_out"], 1, progress)
        self.assertTrue(set(progress["workers"]) <= {"p1", "p2", "p3", "p4"}, progress)
        jobs = farm.wait_jobs([job])
        self.assertEqual(jobs[job]["state"], "succeeded", jobs[job])
        phases = farm.timeline(job)
        check_timeline(self, phases, caps={job: 4})
        lost = [p for p in phases if p["outcome"] == "worker_lost"]
        self.assertTrue(lost and all(p["worker"] in victims for p in lost), lost)
        # Only the lost batches were built again: every other batch was built once.
        builds = {}
        for p in phases:
            if p["phase"] == "build":
                builds.setdefault(p["batch"], []).append(p)
        lost_batches = {p["batch"] for p in lost}
        for batch, bs in builds.items():
            if batch not in lost_batches:
                self.assertEqual(len(bs), 1, f"batch {batch} built {len(bs)} times")
        profiles = [p for p in phases if p["phase"] == "profile"]
        self.assertGreaterEqual(len({p["resource"] for p in profiles}), 3, profiles)
        self.assertTrue(any(overlaps(a, b) for i, a in enumerate(profiles)
                            for b in profiles[i + 1:]), "the job's profiles never overlapped")
        check_measured_once(self, farm, profiles, "sim-p")
        self.assertEqual(schedule_stages(farm, job), expected)

    def test_server_killed_with_eight_batches_out_resumes_measuring_nothing_twice(self):
        farm = self.farm("kill-eight")
        farm.start_server()
        workers = [f"e{i}" for i in range(8)]
        for w in workers:
            farm.start_worker(w, "sim-e", 100.0)
        farm.wait_workers(8)
        # Batches of 16 stages: the search's first wave (every group of every
        # block) fills more than eight of them.
        job = farm.submit("inception_v3", "sim-e", "--max-parallel-batches", "8",
                          "--batch-size", "16")
        # Kill the server while (about) eight batches of the job are out.
        deadline = time.time() + 120
        seen = 0
        while time.time() < deadline:
            states = [w["state"] for w in farm.cli_json("workers")["workers"]]
            out = sum(1 for st in states if st in ("build", "profile"))
            seen = max(seen, out)
            if out >= 6:
                break
            time.sleep(0.02)
        self.assertGreaterEqual(seen, 6, "the job never had six batches on workers")
        farm.kill_server()
        farm.start_server()
        jobs = farm.wait_jobs([job])
        self.assertEqual(jobs[job]["state"], "succeeded", jobs[job])
        phases = farm.timeline(job)
        check_timeline(self, phases, restarted=True)
        check_measured_once(self, farm, phases, "sim-e")

    def test_small_jobs_take_turns_from_long_searches_and_yielded_ones_survive_a_kill(self):
        # Two search places, both held by randwire searches (seconds of
        # search and hundreds to thousands of stages each): a squeezenet job
        # submitted behind them gets a place once a holder's minimum turn is
        # over and ends within seconds. A third search waits until it is
        # overdue and takes a turn; the server is killed while a search is
        # yielded; after the restart all three end, and nothing was measured
        # twice.
        farm = self.farm("turns")
        farm.start_server("--max-searches", "2", "--search-min-turn", "1",
                          "--search-max-wait", "4")
        for i in range(4):
            farm.start_worker(f"t{i}", "sim-t", 1.0)
        farm.wait_workers(4)
        large = [farm.submit("randwire", "sim-t", "--batch", str(b)) for b in (1, 3)]

        def jobs():
            return {j["id"]: j for j in farm.cli_json("list")["jobs"]}

        deadline = time.time() + 120
        while not all(jobs()[i]["progress"]["stages_profiled"] > 0 for i in large):
            self.assertLess(time.time(), deadline, "the long searches measured nothing")
            time.sleep(0.2)
        small = farm.submit("squeezenet", "sim-t")
        submitted = time.time()
        done = farm.wait_jobs([small], timeout=60)
        waited = time.time() - submitted
        self.assertEqual(done[small]["state"], "succeeded", done[small])
        self.assertLess(waited, 20, "the small job waited behind the long searches")
        for i in large:
            self.assertNotIn(done[i]["state"], ("succeeded", "failed", "cancelled"),
                             "a long search ended before the small job: the test proves nothing")
        with open(os.path.join(farm.tmp, "server.log"), errors="replace") as log:
            self.assertIn("yielded its search place", log.read())

        large.append(farm.submit("inception_v3", "sim-t", "--batch", "2"))
        deadline = time.time() + 120
        while not any(j["progress"]["phase"] == "yielded" and j["progress"]["stages_profiled"] > 0
                      for j in jobs().values()):
            self.assertLess(time.time(), deadline, "no search yielded its place")
            time.sleep(0.1)
        farm.kill_server()  # may lose profiles not yet stored: 4 batches of 64 a job at most
        farm.start_server("--max-searches", "2", "--search-min-turn", "1",
                          "--search-max-wait", "4")
        finished = farm.wait_jobs(large, timeout=600)
        for i in large:
            self.assertEqual(finished[i]["state"], "succeeded", finished[i])
        phases = farm.timeline()
        check_timeline(self, phases, restarted=True)
        check_measured_once(self, farm, phases, "sim-t", lost_at_most=3 * 4 * 64)

    def test_a_hundred_workers_two_owners_small_jobs_pass_long_searches(self):
        # The mixed set of a busy farm with the server's default search
        # places: 100 worker processes (profiles as long as the sim's device
        # model says), two owners submitting 20 jobs each within 10 s
        # (squeezenet, resnet50, inception_v3 and nasnet_a_mobile in turn,
        # batches 1-8). Every small job ends while long searches run; every
        # job gets its first enumerate within the documented bound; both
        # owners get places and server time; nothing is measured twice.
        farm = self.farm("hundred")
        tokens = os.path.join(farm.tmp, "clients")
        with open(tokens, "w") as f:
            f.write("alice-token-0123456789 alice\nbob-token-0123456789 bob\n")
        farm.start_server("--client-tokens", tokens)
        farm.cli_env = {"IOSFARM_TOKEN": "alice-token-0123456789"}
        for i in range(100):
            farm.start_worker(f"h{i}", "sim-h", 1.0)
        farm.wait_workers(100, timeout=120)
        models = ["squeezenet", "resnet50", "inception_v3", "nasnet_a_mobile"]
        owner_of, model_of = {}, {}
        start = time.time()
        for i in range(40):
            owner = ("alice", "bob")[i % 2]
            farm.cli_env = {"IOSFARM_TOKEN": f"{owner}-token-0123456789"}
            job = farm.submit(models[(i // 2) % 4], "sim-h", "--batch", str(1 + (i // 2) % 8))
            owner_of[job], model_of[job] = owner, models[(i // 2) % 4]
            time.sleep(max(0.0, start + 0.25 * (i + 1) - time.time()))
        farm.cli_env = {"IOSFARM_TOKEN": "alice-token-0123456789"}
        small = [j for j in model_of if model_of[j] in ("squeezenet", "resnet50")]
        large = [j for j in model_of if j not in small]

        def listed():
            return {j["id"]: j for j in farm.cli_json("list", "--limit", "1000")["jobs"]}

        # The bound on a first enumerate: --search-max-wait (60 s) plus a
        # minimum turn (5 s) plus a safe point; 40 s more for 2 cores
        # shared with 100 workers.
        deadline = start + 10 + 105
        while time.time() < deadline:
            jobs = listed()
            if all(jobs[j]["state"] == "succeeded" for j in small) and all(
                    jobs[j]["progress"]["phase"] not in ("", "queued") for j in large):
                break
            time.sleep(1.0)
        jobs = listed()
        phases = farm.timeline()
        for j in model_of:  # started: its first enumerate began
            self.assertGreater(jobs[j]["started_unix_ms"], 0,
                               f"job {j} ({model_of[j]}) never had an enumerate: {jobs[j]}")
            self.assertLess((jobs[j]["started_unix_ms"] - jobs[j]["submitted_unix_ms"]) / 1000,
                            105, f"job {j} ({model_of[j]}) waited past the bound: {jobs[j]}")
        took = {}
        for j in small:
            self.assertEqual(jobs[j]["state"], "succeeded", jobs[j])
            took[j] = (jobs[j]["finished_unix_ms"] - jobs[j]["submitted_unix_ms"]) / 1000
        print(f"small jobs, submission to result (s): {sorted(round(t, 1) for t in took.values())}",
              file=sys.stderr)
        # No small job waited for the long searches: each ended while a long
        # search that had started before it was submitted was still running.
        behind = 0
        for j in small:
            before = [k for k in large
                      if 0 < jobs[k]["started_unix_ms"] < jobs[j]["submitted_unix_ms"]]
            if not before:
                continue
            behind += 1
            self.assertTrue(
                any(jobs[k]["state"] == "running" or
                    jobs[k]["finished_unix_ms"] > jobs[j]["finished_unix_ms"] for k in before),
                f"small job {j} ({model_of[j]}) ended after every long search before it")
        self.assertGreaterEqual(behind, 10, "too few small jobs came behind long searches")
        median = sorted(took.values())[len(took) // 2]
        self.assertLess(median, 30, f"small jobs' median submission to result {median:.1f} s")
        # Both owners' long searches got turns and server time.
        server_s = {"alice": 0.0, "bob": 0.0}
        for p in phases:
            if not p["worker"] and p["job_id"] in large:
                server_s[owner_of[p["job_id"]]] += p["end_s"] - p["start_s"]
        total = sum(server_s.values())
        self.assertGreater(total, 0)
        for owner, seconds in server_s.items():
            self.assertGreater(seconds, 0.25 * total, f"{owner}'s share of server time {server_s}")
        check_timeline(self, phases,
                       unfinished={j for j in model_of if jobs[j]["state"] != "succeeded"})
        farm.stop()
        db = sqlite3.connect(farm.db)
        self.assertEqual(db.execute("SELECT ignored_measurements FROM devices WHERE key=?",
                                    ("sim-h",)).fetchone()[0], 0, "a stage was measured twice")

    def test_server_killed_mid_job_resumes_without_reprofiling(self):
        # The jobs' searches are the bounded one (the default): killed and
        # resumed, each gives the schedule of an undisturbed run and
        # measures nothing twice.
        specs = [("resnet50", ()), ("squeezenet", ("--batch", "2")),
                 ("inception_v3", ())]
        calm = self.farm("calm-server")
        calm.start_server()
        calm.start_worker("c1", "sim-s", 10.0)
        calm.wait_workers(1)
        calm_ids = [calm.submit(m, "sim-s", *extra) for m, extra in specs]
        calm_jobs = calm.wait_jobs(calm_ids)
        expected = []
        for i in calm_ids:
            self.assertEqual(calm_jobs[i]["state"], "succeeded", calm_jobs[i])
            expected.append(schedule_stages(calm, i))

        farm = self.farm("kill-server")
        farm.start_server()
        farm.start_worker("s1", "sim-s", 10.0)
        farm.start_worker("s2", "sim-s", 10.0)
        farm.wait_workers(2)
        ids = [farm.submit(m, "sim-s", *extra) for m, extra in specs]
        # Kill the server once something is stored but the jobs are unfinished.
        deadline = time.time() + 60
        while time.time() < deadline:
            done = [p for p in farm.timeline() if p["phase"] == "update" and p["outcome"] == "ok"]
            if done:
                break
            time.sleep(0.05)
        self.assertTrue(done, "no update phase completed before the kill")
        farm.kill_server()
        farm.start_server()  # same port, same database; workers reconnect
        jobs = farm.wait_jobs(ids)
        for i in ids:
            self.assertEqual(jobs[i]["state"], "succeeded", jobs[i])
        phases = farm.timeline()
        check_timeline(self, phases, restarted=True)
        # Every completed profile stored only new signatures: nothing was
        # profiled twice, before or after the restart.
        check_measured_once(self, farm, phases, "sim-s")
        for i, stages in zip(ids, expected):
            self.assertEqual(schedule_stages(farm, i), stages, f"job {i}")

    def test_crash_loop_guard_fails_a_job_killed_in_its_search_but_not_on_clean_stops(self):
        farm = self.farm("crash-loop")
        farm.start_server("--max-resumes", "1")
        # Register the key, then go: the jobs enumerate (a server phase) and
        # their build waits for a worker, so each stop finds them in their search.
        farm.start_worker("k1", "sim-k", 10.0)
        farm.wait_workers(1)
        farm.kill_worker("k1")
        deadline = time.time() + 30
        while farm.cli_json("workers")["workers"] and time.time() < deadline:
            time.sleep(0.1)
        job = farm.submit("squeezenet", "sim-k")
        db = lambda: sqlite3.connect(farm.db)

        def wait_phase(phase):
            end = time.time() + 30
            while time.time() < end:
                row = db().execute("SELECT phase FROM jobs WHERE id=?", (job,)).fetchone()
                if row and row[0] == phase:
                    return
                time.sleep(0.05)
            raise AssertionError(f"job {job} never reached {phase}: " + farm.tail())

        def resumes():
            return db().execute("SELECT resumes FROM jobs WHERE id=?", (job,)).fetchone()[0]

        def wait_resumes(count):
            end = time.time() + 30  # the server resumes jobs right after it listens
            while resumes() != count and time.time() < end:
                time.sleep(0.05)
            self.assertEqual(resumes(), count)

        wait_phase("enumerate")
        # Clean stops (SIGTERM) are no crash: three of them leave the job running.
        for _ in range(3):
            farm.server.send_signal(signal.SIGTERM)
            self.assertEqual(farm.server.wait(timeout=30), 0)
            self.assertEqual(resumes(), 0)
            farm.start_server("--max-resumes", "1")
            wait_resumes(1)  # counted at the start, taken back by the next clean stop
            self.assertEqual(farm.cli_json("status", str(job))["job"]["state"], "running")
        # An unclean stop keeps the count (1); the next start makes it 2 > 1:
        # the job fails with a message that says why and is not resumed.
        farm.kill_server()
        farm.start_server("--max-resumes", "1")
        end = time.time() + 30
        while time.time() < end:
            status = farm.cli_json("status", str(job))["job"]
            if status["state"] != "running":
                break
            time.sleep(0.05)
        self.assertEqual(status["state"], "failed", status)
        self.assertIn("not resumed: the server stopped 2 times without a clean shutdown",
                      status["error"])
        self.assertIn("--max-resumes", status["error"])
        # A worker of the key comes back: a new job of the same model tunes.
        farm.start_worker("k2", "sim-k", 10.0)
        again = farm.submit("squeezenet", "sim-k")
        self.assertEqual(farm.wait_jobs([again])[again]["state"], "succeeded")

    def test_cancel_and_bad_requests_keep_the_server_serving(self):
        farm = self.farm("bad")
        farm.start_server()
        farm.start_worker("x1", "sim-x", 50.0)
        farm.wait_workers(1)
        job = farm.submit("resnet50", "sim-x")
        cancelled = farm.cli_json("cancel", str(job))["job"]
        self.assertEqual(cancelled["state"], "cancelled")
        r = farm.cli("cancel", str(job), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("already ended", r.stderr)
        r = farm.cli("submit", "squeezenet", "--device", "no-such-gpu", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no-such-gpu", r.stderr)
        bad = os.path.join(self.tmp, "bad.onnx")
        with open(bad, "wb") as f:
            f.write(b"\x08\x07garbage-not-a-model" * 10)
        r = farm.cli("submit", bad, "--device", "sim-x", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad.onnx", r.stderr)
        r = farm.cli("result", str(job), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cancelled", r.stderr)
        # Still serving: a real job completes.
        ok = farm.submit("squeezenet", "sim-x")
        self.assertEqual(farm.wait_jobs([ok])[ok]["state"], "succeeded")


class FarmSecurityAndRetuneTest(FarmTestBase):
    """TLS with tokens end to end, and batch re-tuning for a new device key."""

    def test_tls_and_tokens(self):
        farm = self.farm("tls")
        cert, key = os.path.join(farm.tmp, "cert.pem"), os.path.join(farm.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True)
        clients, workers = os.path.join(farm.tmp, "clients"), os.path.join(farm.tmp, "workers")
        with open(clients, "w") as f:
            f.write("client-token-0123456789 alice\n")
        with open(workers, "w") as f:
            f.write("worker-token-0123456789 gpu-pool\n")
        farm.start_server("--tls-cert", cert, "--tls-key", key, "--client-tokens", clients,
                          "--worker-tokens", workers)
        farm.start_worker("t1", "sim-t", 0.0, "--tls-ca", cert,
                          "--token", "worker-token-0123456789")
        farm.cli_env = {"IOSFARM_TLS_CA": cert, "IOSFARM_TOKEN": "client-token-0123456789"}
        farm.wait_workers(1)
        job = farm.submit("squeezenet", "sim-t")
        jobs = farm.wait_jobs([job])
        self.assertEqual(jobs[job]["state"], "succeeded", jobs[job])
        self.assertEqual(jobs[job]["owner"], "alice")
        # A wrong token, the worker's token, and no CA each fail and change nothing.
        for env in ({"IOSFARM_TLS_CA": cert, "IOSFARM_TOKEN": "wrong-token-0123456789"},
                    {"IOSFARM_TLS_CA": cert, "IOSFARM_TOKEN": "worker-token-0123456789"},
                    {"IOSFARM_TLS_CA": cert}):
            farm.cli_env = env
            r = farm.cli("submit", "squeezenet", "--device", "sim-t", check=False)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("token", r.stderr)
        farm.cli_env = {"IOSFARM_TOKEN": "client-token-0123456789"}  # plaintext to a TLS port
        r = farm.cli("list", check=False)
        self.assertEqual(r.returncode, 1)
        farm.cli_env = {"IOSFARM_TLS_CA": cert, "IOSFARM_TOKEN": "client-token-0123456789"}
        self.assertEqual(len(farm.cli_json("list")["jobs"]), 1)

    def test_retune_for_a_new_device_key(self):
        farm = self.farm("retune")
        farm.start_server()
        farm.start_worker("old1", "sim-old", 0.0)
        farm.wait_workers(1)
        ids = [farm.submit("squeezenet", "sim-old"), farm.submit("resnet50", "sim-old")]
        for i in ids:
            self.assertEqual(farm.wait_jobs([i])[i]["state"], "succeeded")
        farm.start_worker("new1", "sim-new", 0.0, "--sim-seed", "7")
        farm.wait_workers(2)
        out = farm.cli_json("retune", "--device", "sim-new", "--from-device", "sim-old")
        batch = out["retune_batch"]
        retuned = [j["id"] for j in out["jobs"]]
        self.assertEqual(len(retuned), 2, out)
        jobs = farm.wait_jobs(retuned)
        names = sorted(jobs[i]["model_name"] for i in retuned)
        self.assertEqual(names, ["resnet50", "squeezenet"])
        for i in retuned:
            self.assertEqual(jobs[i]["state"], "succeeded", jobs[i])
            self.assertEqual(jobs[i]["device_key"], "sim-new")
            self.assertEqual(jobs[i]["retune_batch"], batch)
        # Latencies are per device key: the new key's stages were all measured
        # anew (the two jobs may share a few signatures between them).
        rows = sqlite3.connect(farm.db).execute(
            "SELECT device_key, COUNT(*) FROM latencies GROUP BY device_key").fetchall()
        self.assertEqual(dict(rows)["sim-new"], dict(rows)["sim-old"])
        listed = farm.cli_json("list", "--retune-batch", batch)["jobs"]
        self.assertEqual(sorted(j["id"] for j in listed), sorted(retuned))
        check_timeline(self, farm.timeline())


def main():
    global BUILD
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    BUILD = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)


if __name__ == "__main__":
    sys.exit(main())
