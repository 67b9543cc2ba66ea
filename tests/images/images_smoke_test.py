#!/usr/bin/python3
"""Smoke test of the built server and CPU worker images (scripts/build-images.sh),
run the way deploy/docker-compose.yml runs them: each service's command,
environment, volume and health check are read from `docker-compose config`
(with the example env file, its fake tokens replaced by fresh ones), not
copied here.

Containers run with buildah (chroot isolation, vfs storage, the host's
network): no daemon is needed. The compose network's name `server` is given
to the worker through its /etc/hosts; the named volume is a host folder,
prepared as docker prepares a new named volume (the image's folder, its
owner included).

Checks:
 - the runtime images hold no compiler and no -dev package (sizes printed);
 - the server refuses a non-loopback --listen without tokens, naming them;
 - the server starts as the image's unprivileged user with its volume and
   answers the compose health check;
 - the CPU worker connects, a squeezenet job submitted with `iosfarm` inside
   the server image completes, `iosfarm list` shows it, and the database file
   lies in the volume, owned by the container's user.

Usage: images_smoke_test.py [--registry iosfarm] [--version 0.1.0]
Exit 77 (skipped) when the images are not built or buildah is missing.
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, STORAGE_DRIVER=os.environ.get("STORAGE_DRIVER", "vfs"),
           BUILDAH_ISOLATION=os.environ.get("BUILDAH_ISOLATION", "chroot"))
SKIP = 77


def buildah(*args, check=True, timeout=120):
    result = subprocess.run(["buildah", *args], env=ENV, capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        sys.exit(f"buildah {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def compose_config(work):
    """The compose file resolved with the example env file and fresh tokens."""
    env_file = os.path.join(work, "iosfarm.env")
    client, worker = secrets.token_hex(16), secrets.token_hex(16)
    lines = []
    with open(os.path.join(ROOT, "deploy", "iosfarm.env.example")) as example:
        for line in example:
            key = line.split("=", 1)[0]
            if key == "IOSFARM_CLIENT_TOKENS":
                line = f"IOSFARM_CLIENT_TOKENS={client}:smoke\n"
            elif key == "IOSFARM_WORKER_TOKENS":
                line = f"IOSFARM_WORKER_TOKENS={worker}:workers\n"
            elif key == "IOSFARM_WORKER_TOKEN":
                line = f"IOSFARM_WORKER_TOKEN={worker}\n"
            lines.append(line)
    with open(env_file, "w") as out:
        out.writelines(lines)
    text = subprocess.run(["docker-compose", "--env-file", env_file, "-f",
                           os.path.join(ROOT, "deploy", "docker-compose.yml"), "--profile", "cpu",
                           "config"], capture_output=True, text=True, check=True).stdout
    return yaml.safe_load(text), client


def image_config(image):
    """The image's OCI config (Entrypoint, User, ...)."""
    return json.loads(buildah("inspect", "--type", "image", image).stdout)["OCIv1"]["config"]


class Container:
    """A working container of `image`; runs processes in it with buildah run."""

    def __init__(self, image, work, name):
        self.image = image
        self.id = buildah("from", "--pull=false", "--name", f"smoke-{name}-{os.getpid()}",
                          image).stdout.strip()
        self.config = image_config(image)
        self.work = work
        self.name = name
        self.processes = []

    def args(self, env=None, volumes=(), user=None):
        args = ["run"]
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        for volume in volumes:
            args += ["-v", volume]
        if user:
            args += ["--user", user]
        return args + [self.id, "--"]

    def run(self, command, env=None, volumes=(), user=None, timeout=120):
        return buildah(*self.args(env, volumes, user), *command, check=False, timeout=timeout)

    def start(self, command, env=None, volumes=(), log_name="log"):
        log = open(os.path.join(self.work, f"{self.name}.{log_name}"), "w")
        process = subprocess.Popen(["buildah", *self.args(env, volumes), *command], env=ENV,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def log(self, log_name="log"):
        with open(os.path.join(self.work, f"{self.name}.{log_name}")) as f:
            return f.read()

    def remove(self):
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        buildah("rm", self.id, check=False)


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print(f"ok: {message.split(': ')[0]}")


def uid_of(pattern):
    """The user id of the newest host process whose command line matches."""
    pids = subprocess.run(["pgrep", "-n", "-f", pattern], capture_output=True, text=True).stdout
    if not pids.strip():
        return None
    with open(f"/proc/{pids.split()[0]}/status") as status:
        for line in status:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--registry", default="iosfarm")
    parser.add_argument("--version", default="0.1.0")
    args = parser.parse_args()
    if shutil.which("buildah") is None:
        print("skipped: buildah is not installed (scripts/build-images.sh installs it)")
        return SKIP
    images = buildah("images", "--format", "{{.Name}}:{{.Tag}} {{.Size}}").stdout
    sizes = {}
    for line in images.splitlines():
        name, _, size = line.partition(" ")
        sizes[name] = size.strip()
    server_image = f"localhost/{args.registry}/server:{args.version}"
    worker_image = f"localhost/{args.registry}/worker-cpu:{args.version}"
    for image in (server_image, worker_image):
        if image not in sizes:
            print(f"skipped: {image} is not built (make images)")
            return SKIP
        print(f"image {image}: {sizes[image]}")

    work = tempfile.mkdtemp(prefix="iosfarm-images-")
    config, client_token = compose_config(work)
    server_svc = config["services"]["server"]
    worker_svc = config["services"]["worker-cpu"]
    containers = []
    try:
        server = Container(server_image, work, "server")
        containers.append(server)
        worker = Container(worker_image, work, "worker")
        containers.append(worker)

        # No compiler, no -dev package in the runtime images.
        for c in (server, worker):
            listed = c.run(["dpkg-query", "-W", "-f", "${Package}\n"], user="root").stdout.split()
            # gcc-12-base (copyright files libgcc needs) is no compiler.
            dev = [p for p in listed if p.endswith("-dev") or p in ("cmake", "ninja-build", "make")
                   or re.fullmatch(r"(gcc|g\+\+|cpp|clang)(-[0-9.]+)?", p)]
            check(not dev, f"{c.image} holds no compiler or -dev package: {dev}")

        entrypoint = server.config.get("Entrypoint") or []
        server_command = entrypoint + [str(a) for a in server_svc["command"]]
        server_env = {k: str(v) for k, v in server_svc["environment"].items()}

        # Without tokens a non-loopback listen is refused, naming the tokens.
        refused = server.run(server_command, timeout=30)
        said = (refused.stderr + refused.stdout).strip()
        check(refused.returncode != 0 and "TOKEN" in said.upper(),
              f"the server refuses 0.0.0.0 without tokens: rc {refused.returncode}, {said[:300]}")
        print("    it says: " + next((l for l in said.splitlines() if "TOKEN" in l.upper()), ""))

        # The named volume: a host folder as docker makes one (the image's
        # folder and its owner).
        volume = server_svc["volumes"][0]
        target = volume["target"] if isinstance(volume, dict) else volume.split(":")[1]
        owner = server.run(["stat", "-c", "%u:%g", target], user="root").stdout.strip()
        host_volume = os.path.join(work, "volumes", "iosfarm-data")
        os.makedirs(host_volume)
        uid, gid = (int(x) for x in owner.split(":"))
        os.chown(host_volume, uid, gid)
        check(uid != 0, f"the volume {target} belongs to an unprivileged user: {owner}")
        volumes = [f"{host_volume}:{target}"]

        server.start(server_command, env=server_env, volumes=volumes)
        health = [str(a) for a in server_svc["healthcheck"]["test"][1:]]  # after "CMD"
        deadline = time.time() + 90
        healthy = None
        while time.time() < deadline:
            healthy = server.run(health, timeout=30)
            if healthy.returncode == 0:
                break
            time.sleep(2)
        check(healthy is not None and healthy.returncode == 0,
              f"the compose health check passes: {healthy.stderr if healthy else ''}"
              f"{server.log()[-2000:]}")
        server_uid = uid_of("iosfarm-server --listen")
        check(server_uid is not None and server_uid == uid,
              f"the server runs as the image's user (uid {server_uid}, volume owner {uid})")

        hosts = os.path.join(work, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n127.0.0.1 server\n")
        worker_command = (worker.config.get("Entrypoint") or []) + \
            [str(a) for a in worker_svc["command"]]
        worker_env = {k: str(v) for k, v in worker_svc["environment"].items()}
        worker.start(worker_command, env=worker_env, volumes=[f"{hosts}:/etc/hosts:ro"])
        device_key = worker_command[worker_command.index("--device-key") + 1]

        cli_env = {"IOSFARM_TOKEN": client_token}
        deadline = time.time() + 60
        workers = None
        while time.time() < deadline:
            workers = server.run(["iosfarm", "workers", "--server", "127.0.0.1:7070"],
                                 env=cli_env, timeout=30)
            if device_key in workers.stdout:
                break
            time.sleep(2)
        check(workers is not None and device_key in workers.stdout,
              f"the CPU worker joined: {workers.stdout if workers else ''}{worker.log()[-2000:]}")

        submit = server.run(["iosfarm", "submit", "squeezenet", "--server", "127.0.0.1:7070",
                             "--device", device_key, "--wait"], env=cli_env, timeout=1800)
        check(submit.returncode == 0,
              f"a squeezenet job completes through the containers: {submit.stdout[-1500:]}"
              f"{submit.stderr[-1500:]}")
        listed = server.run(["iosfarm", "list", "--server", "127.0.0.1:7070"], env=cli_env)
        check(listed.returncode == 0 and "squeezenet" in listed.stdout
              and "succeeded" in listed.stdout.lower(),
              f"iosfarm list in the server image shows it: {listed.stdout}{listed.stderr}")
        print(listed.stdout)
        db = os.path.join(host_volume, "farm.db")
        check(os.path.exists(db) and os.stat(db).st_uid == uid,
              f"the database lies in the volume, owned by the container's user: {db}")
        print(f"images smoke test: OK ({work})")
        return 0
    except AssertionError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    finally:
        for c in containers:
            c.remove()


if __name__ == "__main__":
    sys.exit(main())
