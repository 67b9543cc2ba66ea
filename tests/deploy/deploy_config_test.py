#!/usr/bin/env python3
"""Checks that the deployment files agree with each other and with the binaries.

    deploy_config_test.py [--source-dir DIR] [--server-binary FILE]

Parses docker/*.Dockerfile, deploy/docker-compose.yml, deploy/iosfarm.env.example
and the kustomize base in deploy/k8s/, and checks: every flag passed to
iosfarm-server / iosfarm-worker exists in server/server_main.cc /
worker/worker_main.cc (so renaming a flag breaks this test) and the required
ones are given; ports, health checks, images, GPU requests, token secrets and
the database volume agree across the Dockerfiles, compose and Kubernetes;
example tokens are valid and clearly fake. Runs `docker-compose config -q`,
`yamllint` and `kubectl kustomize` when those tools exist (skipped with a
message otherwise), and runs docker/iosfarm-healthcheck against a real
iosfarm-server when --server-binary is given and python3-grpcio is there.
Images are not built: that needs a Docker engine.
"""
import argparse
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import yaml
except ImportError:  # Debian's python3-yaml lives with /usr/bin/python3
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("deploy_config_test: needs PyYAML (Debian: python3-yaml, scripts/install-deps.sh)",
          file=sys.stderr)
    sys.exit(1)

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVER_BINARY = ""
MIN_TOKEN_LENGTH = 16  # server/auth.cc kMinTokenLength


def path(*parts):
    return os.path.join(SOURCE, *parts)


def read(*parts):
    with open(path(*parts), encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------- the binaries

class BinaryFlags:
    """The flags a CLI11 main declares: options (take a value), flags, required ones."""

    def __init__(self, source_file):
        text = read(source_file)
        self.options = set(re.findall(r'add_option\(\s*"(--[\w-]+)"', text))
        self.flags = set(re.findall(r'add_flag\(\s*"(--[\w-]+)"', text))
        # add_option("--x", ...)->...->required() within one statement.
        self.required = set(re.findall(r'add_option\(\s*"(--[\w-]+)"[^;]*?->required\(\)', text, re.S))
        assert self.options, f"no add_option found in {source_file}: did the flag parser change?"

    def parse(self, argv, where):
        """argv (no program name) -> {flag: value}; raises on unknown flags."""
        values, i = {}, 0
        while i < len(argv):
            arg = str(argv[i])
            if not arg.startswith("--"):
                raise AssertionError(f"{where}: unexpected positional argument {arg!r} in {argv}")
            name, eq, value = arg.partition("=")
            if name in self.flags:
                values[name] = True
            elif name in self.options:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise AssertionError(f"{where}: {name} has no value")
                    value = str(argv[i])
                values[name] = value
            else:
                raise AssertionError(f"{where}: unknown flag {name} (known: "
                                     f"{sorted(self.options | self.flags)})")
            i += 1
        return values


def env_names_read(*dirs):
    """IOSFARM_* environment variable names that the C++ sources under dirs mention."""
    names = set()
    for d in dirs:
        for f in glob.glob(path(d, "*.cc")) + glob.glob(path(d, "*.h")):
            if f.endswith("_test.cc"):
                continue
            with open(f, encoding="utf-8") as handle:
                names |= set(re.findall(r'"(IOSFARM_[A-Z_]+)"', handle.read()))
    return names


# ---------------------------------------------------------------- Dockerfiles

class Dockerfile:
    def __init__(self, name):
        self.name = name
        text = read("docker", name)
        text = re.sub(r"\\\n", " ", text)  # join continuation lines
        self.lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
        self.args = {}
        self.stages = []  # [(from_image_resolved, [instructions])]
        for line in self.lines:
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "ARG":
                key, _, default = rest.strip().partition("=")
                self.args.setdefault(key, default.strip('"'))
            elif keyword == "FROM":
                image = self.resolve(rest.split()[0])
                self.stages.append((image, []))
            elif self.stages:
                self.stages[-1][1].append((keyword, rest.strip()))

    def resolve(self, text):
        return re.sub(r"\$\{(\w+)\}", lambda m: self.args.get(m.group(1), m.group(0)), text)

    def final(self, keyword):
        """Values of an instruction in the last (runtime) stage."""
        return [rest for k, rest in self.stages[-1][1] if k == keyword]

    def exec_form(self, keyword):
        values = self.final(keyword)
        assert len(values) == 1, f"{self.name}: expected one {keyword}, got {values}"
        return json.loads(values[0])

    def apt_packages(self, stage):
        packages = set()
        for k, rest in self.stages[stage][1]:
            if k == "RUN" and "apt-get install" in rest:
                for command in rest.split("&&"):
                    if "apt-get install" in command:
                        words = shlex.split(command.split("apt-get install", 1)[1])
                        packages |= {w for w in words if not w.startswith("-")}
        return packages


def install_deps_packages():
    text = read("scripts", "install-deps.sh")
    block = re.search(r"packages=\((.*?)\)", text, re.S).group(1)
    return set(re.sub(r"#.*", "", block).split())


# ---------------------------------------------------------------- compose

def read_env_file(name):
    env = {}
    for line in read(name).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


def interpolate(text, env):
    """Compose variable substitution: ${X}, ${X:-default}, ${X:?error}."""
    def substitute(m):
        name, op, arg = m.group(1), m.group(2) or "", m.group(3) or ""
        value = env.get(name, "")
        if op == ":?" and not value:
            raise AssertionError(f"compose needs {name}: {arg}")
        return value if value else (arg if op == ":-" else "")
    return re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", substitute, text)


def compose_variables(text):
    return set(re.findall(r"\$\{(\w+)", text))


def port_of(address):
    return int(str(address).rsplit(":", 1)[1])


def host_of(address):
    return str(address).rsplit(":", 1)[0]


def parse_token_list(value, origin):
    """IOSFARM_*_TOKENS: comma-separated token[:name] -> {token: name}."""
    tokens = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        token, _, name = item.partition(":")
        tokens[token] = name
    assert tokens, f"{origin}: no tokens"
    return tokens


def parse_token_file(text, origin):
    """Token file: one "TOKEN [NAME]" per line, '#' comments."""
    tokens = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        token, _, name = line.partition(" ")
        assert token not in tokens, f"{origin}: duplicate token"
        tokens[token] = name.strip()
    assert tokens, f"{origin}: no tokens"
    return tokens


def load_compose():
    env = read_env_file(os.path.join("deploy", "iosfarm.env.example"))
    raw = read("deploy", "docker-compose.yml")
    return yaml.safe_load(interpolate(raw, env)), raw, env


def load_k8s():
    kustomization = yaml.safe_load(read("deploy", "k8s", "kustomization.yaml"))
    objects = []
    for resource in kustomization["resources"]:
        objects += [o for o in yaml.safe_load_all(read("deploy", "k8s", resource)) if o]
    return kustomization, objects


def k8s_object(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert found, f"deploy/k8s: no {kind} {name or ''}"
    return found


def image_repo(image):
    """registry/name:tag -> registry/name (a ':' after the last '/' is a tag)."""
    image = str(image)
    slash = image.rfind("/")
    colon = image.rfind(":")
    return image[:colon] if colon > slash else image


class DeployConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server_flags = BinaryFlags(os.path.join("server", "server_main.cc"))
        cls.worker_flags = BinaryFlags(os.path.join("worker", "worker_main.cc"))
        cls.compose, cls.compose_raw, cls.env = load_compose()
        cls.services = cls.compose["services"]
        cls.kustomization, cls.k8s = load_k8s()
        cls.dockerfiles = {name: Dockerfile(name) for name in
                           ("server.Dockerfile", "worker-cuda.Dockerfile", "worker-cpu.Dockerfile")}

    # ---- helpers over the parsed files

    def compose_service_of(self, dockerfile):
        return {n: s for n, s in self.services.items()
                if s.get("build", {}).get("dockerfile") == f"docker/{dockerfile}"}

    def server_service(self):
        services = self.compose_service_of("server.Dockerfile")
        self.assertEqual(len(services), 1, "compose: exactly one server service")
        return next(iter(services.items()))

    def k8s_containers(self, image_name):
        result = []
        for o in self.k8s:
            spec = o.get("spec", {}).get("template", {}).get("spec")
            if not spec:
                continue
            for c in spec["containers"]:
                if image_repo(c["image"]) == image_name:
                    result.append((o, spec, c))
        self.assertTrue(result, f"deploy/k8s: no container runs {image_name}")
        return result

    def server_docker_command(self):
        docker = self.dockerfiles["server.Dockerfile"]
        entry, cmd = docker.exec_form("ENTRYPOINT"), docker.exec_form("CMD")
        self.assertEqual(entry, ["iosfarm-server"], "server.Dockerfile ENTRYPOINT")
        return self.server_flags.parse(cmd, "server.Dockerfile CMD")

    # ---- flags

    def test_server_commands_use_real_flags(self):
        commands = {"server.Dockerfile CMD": self.server_docker_command()}
        name, service = self.server_service()
        commands[f"compose {name}"] = self.server_flags.parse(service["command"], f"compose {name}")
        for _, _, c in self.k8s_containers("iosfarm/server"):
            self.assertNotIn("command", c, "k8s server: keep the image ENTRYPOINT, pass args")
            commands[f"k8s {c['name']}"] = self.server_flags.parse(c["args"], f"k8s {c['name']}")
        for where, flags in commands.items():
            for required in self.server_flags.required:
                self.assertIn(required, flags, f"{where}: iosfarm-server needs {required}")
            self.assertIn("--listen", flags, f"{where}: listen beyond loopback")
            self.assertEqual(host_of(flags["--listen"]), "0.0.0.0", where)
            self.assertNotIn("--insecure", flags, f"{where}: deployments use tokens")
            if "--policy" in flags:
                self.assertIn(flags["--policy"], ("interleaved", "sequential", "synchronous"), where)

    def test_worker_commands_use_real_flags(self):
        workers = []
        for dockerfile in ("worker-cuda.Dockerfile", "worker-cpu.Dockerfile"):
            self.assertEqual(self.dockerfiles[dockerfile].exec_form("ENTRYPOINT"), ["iosfarm-worker"])
            services = self.compose_service_of(dockerfile)
            self.assertTrue(services, f"compose: no service built from {dockerfile}")
            for name, service in services.items():
                workers.append((f"compose {name}", dockerfile, service["command"]))
        for image, dockerfile in (("iosfarm/worker-cuda", "worker-cuda.Dockerfile"),):
            for o, _, c in self.k8s_containers(image):
                workers.append((f"k8s {o['metadata']['name']}", dockerfile, c["args"]))
        for where, dockerfile, argv in workers:
            flags = self.worker_flags.parse(argv, where)
            for required in self.worker_flags.required:
                self.assertIn(required, flags, f"{where}: iosfarm-worker needs {required}")
            expected = "cuda" if "cuda" in dockerfile else "cpu"
            self.assertEqual(flags.get("--backend"), expected, f"{where}: --backend")
            if expected == "cuda":
                self.assertEqual(flags.get("--gpu"), "0", f"{where}: the container sees one GPU: --gpu 0")
            self.assertTrue(re.fullmatch(r"[a-z0-9][a-z0-9._-]*", flags["--device-key"]),
                            f"{where}: device key {flags['--device-key']!r}")

    # ---- ports and addresses

    def test_ports_and_addresses_agree(self):
        docker = self.dockerfiles["server.Dockerfile"]
        port = port_of(self.server_docker_command()["--listen"])
        self.assertEqual(docker.final("EXPOSE"), [str(port)], "server.Dockerfile EXPOSE")
        name, service = self.server_service()
        self.assertEqual(port_of(self.server_flags.parse(service["command"], name)["--listen"]), port)
        targets = [int(str(p).rsplit(":", 1)[1]) for p in service["ports"]]
        self.assertEqual(targets, [port], f"compose {name}: ports")
        for worker, w in self.services.items():
            if worker == name:
                continue
            server = self.worker_flags.parse(w["command"], worker)["--server"]
            self.assertEqual(server, f"{name}:{port}", f"compose {worker}: --server")
            self.assertEqual(w.get("depends_on", {}).get(name, {}).get("condition"), "service_healthy",
                             f"compose {worker}: start after the server is healthy")

        (svc,) = k8s_object(self.k8s, "Service")
        (sts,) = k8s_object(self.k8s, "StatefulSet")
        self.assertEqual(svc["spec"].get("type", "ClusterIP"), "ClusterIP")
        (svc_port,) = svc["spec"]["ports"]
        self.assertEqual(svc_port["port"], port, "k8s Service port")
        for _, _, c in self.k8s_containers("iosfarm/server"):
            self.assertEqual(port_of(self.server_flags.parse(c["args"], "k8s")["--listen"]), port)
            (container_port,) = c["ports"]
            self.assertEqual(container_port["containerPort"], port, "k8s containerPort")
            self.assertIn(svc_port["targetPort"], (port, container_port["name"]), "k8s Service targetPort")
        pod_labels = sts["spec"]["template"]["metadata"]["labels"]
        for key, value in svc["spec"]["selector"].items():
            self.assertEqual(pod_labels.get(key), value, "k8s Service selector must match the server pod")
        self.assertEqual(sts["spec"]["serviceName"], svc["metadata"]["name"])
        for o, _, c in self.k8s_containers("iosfarm/worker-cuda"):
            server = self.worker_flags.parse(c["args"], "k8s worker")["--server"]
            self.assertEqual(server, f"{svc['metadata']['name']}:{port}", f"k8s {o['metadata']['name']}: --server")

    # ---- health checks

    def test_health_checks_agree(self):
        docker = self.dockerfiles["server.Dockerfile"]
        (healthcheck,) = docker.final("HEALTHCHECK")
        argv = json.loads(healthcheck.split("CMD", 1)[1].strip())
        port = port_of(self.server_docker_command()["--listen"])
        self.assertEqual(port_of(argv[1]), port, "health check port")
        self.assertEqual(host_of(argv[1]), "127.0.0.1")
        script = path("docker", argv[0])
        self.assertTrue(os.access(script, os.X_OK), f"{script} must exist and be executable")
        build_text = " ".join(rest for _, rest in docker.stages[0][1])
        self.assertIn(f"docker/{argv[0]}", build_text, "server image must install the health check")
        self.assertIn("python3-grpcio", docker.apt_packages(-1), "the health check needs python3-grpcio")
        self.assertIn("import grpc", read("docker", argv[0]))

        _, service = self.server_service()
        self.assertEqual(service["healthcheck"]["test"], ["CMD"] + argv, "compose healthcheck")
        for _, _, c in self.k8s_containers("iosfarm/server"):
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                self.assertIn(probe, c, f"k8s server: {probe}")
                self.assertEqual(c[probe]["exec"]["command"], argv, f"k8s server {probe}")

    # ---- GPUs

    def test_gpu_requests(self):
        gpu_ids = []
        for name, service in self.compose_service_of("worker-cuda.Dockerfile").items():
            devices = service["deploy"]["resources"]["reservations"]["devices"]
            self.assertEqual(len(devices), 1, f"compose {name}: one device reservation")
            device = devices[0]
            self.assertEqual(device.get("driver"), "nvidia", name)
            self.assertIn("gpu", device.get("capabilities", []), name)
            self.assertNotIn("count", device, f"compose {name}: pin a GPU with device_ids, not count")
            self.assertEqual(len(device["device_ids"]), 1, f"compose {name}: exactly one GPU per worker")
            gpu_ids += [str(i) for i in device["device_ids"]]
        self.assertGreaterEqual(len(gpu_ids), 2, "compose: show how N GPU workers look")
        self.assertEqual(len(gpu_ids), len(set(gpu_ids)), f"compose: a GPU given to two workers: {gpu_ids}")
        for name, service in self.compose_service_of("worker-cpu.Dockerfile").items():
            self.assertIn("cpu", service.get("profiles", []), f"compose {name}: in the cpu profile")
            self.assertNotIn("deploy", service, f"compose {name}: a CPU worker reserves no GPU")
        for name, service in self.services.items():
            if name not in self.compose_service_of("worker-cuda.Dockerfile"):
                self.assertNotIn("nvidia", json.dumps(service.get("deploy", {})), name)

        for o, spec, c in self.k8s_containers("iosfarm/worker-cuda"):
            where = f"k8s {o['kind']} {o['metadata']['name']}"
            self.assertIn(o["kind"], ("Deployment", "DaemonSet"), where)
            self.assertEqual(str(c["resources"]["limits"]["nvidia.com/gpu"]), "1", f"{where}: one GPU per pod")
            self.assertIn("requests", c["resources"], f"{where}: resource requests")
            labels = o["spec"]["template"]["metadata"]["labels"]
            for key, value in o["spec"]["selector"]["matchLabels"].items():
                self.assertEqual(labels.get(key), value, f"{where}: selector must match the pod labels")
            anti = spec.get("affinity", {}).get("podAntiAffinity", {})
            self.assertTrue(anti, f"{where}: pod anti-affinity")
            key = self.worker_flags.parse(c["args"], where)["--device-key"]
            self.assertEqual(labels.get("iosfarm.dev/device-key"), key, f"{where}: device-key label")

    def test_cuda_image_matches_the_toolkit(self):
        docker = self.dockerfiles["worker-cuda.Dockerfile"]
        (build, _), (runtime, _) = docker.stages[0], docker.stages[-1]
        pattern = r"nvidia/cuda:(\d+)\.(\d+)\.(\d+)-cudnn-(devel|runtime)-ubuntu(\d+\.\d+)"
        b, r = re.fullmatch(pattern, build), re.fullmatch(pattern, runtime)
        self.assertTrue(b and r, f"worker-cuda.Dockerfile: pinned cudnn images, got {build}, {runtime}")
        self.assertEqual((b.group(4), r.group(4)), ("devel", "runtime"))
        self.assertEqual(b.groups()[:3] + b.groups()[4:], r.groups()[:3] + r.groups()[4:],
                         "build and runtime images must be the same CUDA version and OS")
        self.assertEqual(b.group(1), "13", "the project builds with CUDA 13 (DESIGN.md)")
        nvcc = "/usr/local/cuda/bin/nvcc"
        if os.access(nvcc, os.X_OK):
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
            m = re.search(r"release (\d+)\.(\d+)", out)
            if m:
                self.assertEqual((b.group(1), b.group(2)), m.groups(),
                                 f"image CUDA {b.group(1)}.{b.group(2)} vs local nvcc {m.group(0)}")
        else:
            print("note: no /usr/local/cuda/bin/nvcc: CUDA image version not compared with a local toolkit",
                  file=sys.stderr)

    # ---- images

    def test_images_agree(self):
        expected = {"server.Dockerfile": "iosfarm/server", "worker-cuda.Dockerfile": "iosfarm/worker-cuda",
                    "worker-cpu.Dockerfile": "iosfarm/worker-cpu"}
        version = re.search(r"project\(iosfarm VERSION ([\d.]+)", read("CMakeLists.txt")).group(1)
        self.assertEqual(self.env["IOSFARM_VERSION"], version, "iosfarm.env.example tag vs CMake version")
        for name, service in self.services.items():
            dockerfile = service["build"]["dockerfile"]
            self.assertTrue(os.path.exists(path(service["build"]["context"].replace("..", ""), dockerfile)),
                            f"compose {name}: {dockerfile}")
            self.assertEqual(service["build"]["context"], "..", f"compose {name}: context is the repo root")
            self.assertEqual(service["image"], f"{expected[os.path.basename(dockerfile)]}:{version}", name)
        tags = {i["name"]: i["newTag"] for i in self.kustomization["images"]}
        for o in self.k8s:
            spec = o.get("spec", {}).get("template", {}).get("spec")
            for c in (spec or {}).get("containers", []):
                self.assertIn(c["image"], tags, f"k8s {o['metadata']['name']}: image not in kustomization")
                self.assertIn(c["image"], expected.values())
        for name, tag in tags.items():
            self.assertEqual(tag, version, f"kustomization tag of {name}")
        for docker in self.dockerfiles.values():
            for image, _ in docker.stages:
                self.assertNotIn("$", image, f"{docker.name}: unresolved ARG in FROM {image}")
                repo_tag = image.split("/")[-1]
                self.assertIn(":", repo_tag, f"{docker.name}: FROM {image} needs a tag")
                tag = repo_tag.split(":", 1)[1]
                self.assertNotEqual(tag, "latest", docker.name)
                self.assertTrue(re.search(r"\d", tag), f"{docker.name}: FROM {image}: pin a version")

    def test_build_stages_install_the_build_dependencies(self):
        deps = install_deps_packages()
        needed = {p for p in deps if p.endswith("-dev") or p.startswith("protobuf-compiler")
                  or p in ("cmake", "ninja-build", "pkg-config", "build-essential")}
        needed -= {"libclang-rt-14-dev"}  # the fuzz build only
        for docker in self.dockerfiles.values():
            missing = needed - docker.apt_packages(0)
            self.assertFalse(missing, f"{docker.name}: build stage lacks {sorted(missing)} "
                                      "(scripts/install-deps.sh has them)")
            build_text = " ".join(rest for _, rest in docker.stages[0][1])
            self.assertIn("docker/runtime-packages.sh", build_text, docker.name)
            self.assertIn("--target", build_text, f"{docker.name}: build only the binaries it ships")
            self.assertTrue(any("runtime-packages.txt" in rest for _, rest in docker.stages[-1][1]),
                            f"{docker.name}: runtime stage installs the libraries the binaries load")
        cuda = self.dockerfiles["worker-cuda.Dockerfile"]
        self.assertTrue(any("-DIOSFARM_CUDA=ON" in rest for _, rest in cuda.stages[0][1]),
                        "worker-cuda must fail to build rather than silently drop the CUDA backend")

    def test_non_root(self):
        uids = set()
        for docker in self.dockerfiles.values():
            users = docker.final("USER")
            self.assertTrue(users and users[-1] not in ("root", "0"), f"{docker.name}: USER")
            uid = re.search(r"useradd [^&]*--uid (\d+)[^&]* " + re.escape(users[-1]),
                            " ".join(docker.final("RUN")))
            self.assertTrue(uid, f"{docker.name}: useradd --uid for {users[-1]}")
            uids.add(int(uid.group(1)))
        self.assertEqual(len(uids), 1, f"one uid for all images: {uids}")
        for o in self.k8s:
            spec = o.get("spec", {}).get("template", {}).get("spec")
            if spec:
                security = spec.get("securityContext", {})
                self.assertTrue(security.get("runAsNonRoot"), f"k8s {o['metadata']['name']}: runAsNonRoot")
                self.assertEqual(security.get("runAsUser"), next(iter(uids)), o["metadata"]["name"])

    # ---- tokens

    def check_tokens(self, tokens, origin):
        for token in tokens:
            self.assertGreaterEqual(len(token), MIN_TOKEN_LENGTH, f"{origin}: token too short")
            self.assertIn("FAKE", token, f"{origin}: example tokens must be obviously fake")

    def test_compose_tokens(self):
        server_env = env_names_read("server")
        worker_env = env_names_read("worker")
        used = compose_variables(self.compose_raw)
        self.assertEqual(used, set(self.env), "every variable of iosfarm.env.example is used by "
                                              "docker-compose.yml and the other way round")
        name, service = self.server_service()
        for var in ("IOSFARM_CLIENT_TOKENS", "IOSFARM_WORKER_TOKENS"):
            self.assertIn(var, server_env, f"the server no longer reads {var}")
            self.assertIn(var, service["environment"], f"compose {name}: {var}")
        for var in service["environment"]:
            self.assertIn(var, server_env, f"compose {name}: the server does not read {var}")
        clients = parse_token_list(self.env["IOSFARM_CLIENT_TOKENS"], "IOSFARM_CLIENT_TOKENS")
        workers = parse_token_list(self.env["IOSFARM_WORKER_TOKENS"], "IOSFARM_WORKER_TOKENS")
        self.check_tokens(clients, "IOSFARM_CLIENT_TOKENS")
        self.check_tokens(workers, "IOSFARM_WORKER_TOKENS")
        self.assertFalse(set(clients) & set(workers), "client and worker tokens must differ")
        self.assertIn("IOSFARM_WORKER_TOKEN", worker_env, "the worker no longer reads IOSFARM_WORKER_TOKEN")
        for worker, w in self.services.items():
            if worker == name:
                continue
            for var in w["environment"]:
                self.assertIn(var, worker_env, f"compose {worker}: the worker does not read {var}")
            self.assertIn(w["environment"]["IOSFARM_WORKER_TOKEN"], workers,
                          f"compose {worker}: its token must be one the server accepts")

    def test_k8s_tokens(self):
        (secret,) = k8s_object(self.k8s, "Secret")
        data = secret["stringData"]

        def secret_file(spec, container, file_path, where):
            for mount in container["volumeMounts"]:
                prefix = mount["mountPath"].rstrip("/") + "/"
                if not file_path.startswith(prefix):
                    continue
                volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
                self.assertEqual(volume["secret"]["secretName"], secret["metadata"]["name"], where)
                relative = file_path[len(prefix):]
                for item in volume["secret"].get("items", []):
                    if item["path"] == relative:
                        self.assertIn(item["key"], data, f"{where}: Secret has no key {item['key']}")
                        return data[item["key"]]
                self.assertIn(relative, data, where)
                return data[relative]
            self.fail(f"{where}: {file_path} is on no mounted volume")

        for _, spec, c in self.k8s_containers("iosfarm/server"):
            flags = self.server_flags.parse(c["args"], "k8s server")
            clients = parse_token_file(secret_file(spec, c, flags["--client-tokens"], "--client-tokens"),
                                       "client-tokens")
            workers = parse_token_file(secret_file(spec, c, flags["--worker-tokens"], "--worker-tokens"),
                                       "worker-tokens")
        self.check_tokens(clients, "k8s client-tokens")
        self.check_tokens(workers, "k8s worker-tokens")
        self.assertFalse(set(clients) & set(workers), "client and worker tokens must differ")
        for o, spec, c in self.k8s_containers("iosfarm/worker-cuda"):
            flags = self.worker_flags.parse(c["args"], "k8s worker")
            token = secret_file(spec, c, flags["--token-file"], "--token-file").strip()
            self.assertIn(token, workers, f"k8s {o['metadata']['name']}: worker token not accepted")

    # ---- the database

    def test_database_on_the_volume(self):
        docker = self.dockerfiles["server.Dockerfile"]
        db = self.server_docker_command()["--db"]
        (volume,) = docker.final("VOLUME")
        self.assertEqual(os.path.dirname(db), volume, "server.Dockerfile: --db inside the VOLUME")
        name, service = self.server_service()
        self.assertEqual(self.server_flags.parse(service["command"], name)["--db"], db)
        mounts = [v.split(":") for v in service["volumes"]]
        self.assertIn([next(iter(self.compose["volumes"])), volume], [m[:2] for m in mounts],
                      f"compose {name}: the database directory on a named volume")
        (sts,) = k8s_object(self.k8s, "StatefulSet")
        self.assertEqual(sts["spec"]["replicas"], 1, "one server per SQLite file")
        claims = [t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]]
        for _, _, c in self.k8s_containers("iosfarm/server"):
            self.assertEqual(self.server_flags.parse(c["args"], "k8s")["--db"], db)
            mount = next(m for m in c["volumeMounts"] if m["mountPath"] == volume)
            self.assertIn(mount["name"], claims, "k8s: the database directory on the PVC")

    # ---- kustomize base

    def test_kustomization_lists_every_manifest(self):
        listed = set(self.kustomization["resources"])
        present = {os.path.basename(f) for f in glob.glob(path("deploy", "k8s", "*.yaml"))} - {"kustomization.yaml"}
        self.assertEqual(listed, present, "deploy/k8s/kustomization.yaml resources")
        (namespace,) = k8s_object(self.k8s, "Namespace")
        self.assertEqual(namespace["metadata"]["name"], self.kustomization["namespace"])
        for o in self.k8s:
            self.assertNotIn("namespace", o["metadata"], "the kustomization sets the namespace")

    def test_dockerignore(self):
        patterns = [l.strip() for l in read(".dockerignore").splitlines() if l.strip() and not l.startswith("#")]
        for needed in (".git", "build", "build-*"):
            self.assertIn(needed, patterns, f".dockerignore: {needed}")
        tracked = subprocess.run(["git", "ls-files"], cwd=SOURCE, capture_output=True, text=True).stdout.split()
        for f in tracked or ["CMakeLists.txt", "docker/runtime-packages.sh", "server/server_main.cc"]:
            for p in patterns:
                if p.startswith("deploy/"):
                    continue  # real settings, never tracked
                self.assertFalse(fnmatch.fnmatch(f, p) or fnmatch.fnmatch(f.split("/")[0], p),
                                 f".dockerignore pattern {p} drops tracked file {f}")

    def test_runtime_packages_script(self):
        script = path("docker", "runtime-packages.sh")
        self.assertEqual(subprocess.run(["sh", "-n", script]).returncode, 0)
        if not (SERVER_BINARY and shutil.which("dpkg")):
            self.skipTest("no --server-binary or no dpkg: runtime-packages.sh not run")
        out = subprocess.run([script, SERVER_BINARY], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        packages = out.stdout.split()
        self.assertTrue(any(p.startswith("libsqlite3") for p in packages), packages)
        self.assertTrue(any(p.startswith("libgrpc++") for p in packages), packages)

    # ---- external tools, when present

    def test_docker_compose_config(self):
        tool = shutil.which("docker-compose")
        if not tool:
            self.skipTest("docker-compose not installed (Debian: docker-compose): compose file not "
                          "validated by compose itself")
        out = subprocess.run([tool, "--env-file", path("deploy", "iosfarm.env.example"), "-f",
                              path("deploy", "docker-compose.yml"), "--profile", "cpu", "config", "-q"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_yamllint(self):
        tool = shutil.which("yamllint")
        if not tool:
            self.skipTest("yamllint not installed (Debian: yamllint)")
        config = ("{extends: default, rules: {line-length: {max: 120}, document-start: disable, "
                  "truthy: {check-keys: false}}}")
        files = [path("deploy", "docker-compose.yml")] + sorted(glob.glob(path("deploy", "k8s", "*.yaml")))
        out = subprocess.run([tool, "-s", "-d", config] + files, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_kustomize_build(self):
        kubectl = shutil.which("kubectl")
        if not kubectl:
            self.skipTest("kubectl not installed: kustomize build not run")
        out = subprocess.run([kubectl, "kustomize", path("deploy", "k8s")], capture_output=True, text=True,
                             timeout=120)
        if out.returncode != 0 and "kustomize" in out.stderr and "unknown command" in out.stderr:
            self.skipTest("this kubectl has no kustomize")
        self.assertEqual(out.returncode, 0, out.stderr)
        built = [o for o in yaml.safe_load_all(out.stdout) if o]
        version = self.env["IOSFARM_VERSION"]
        for o in built:
            self.assertEqual(o["metadata"].get("namespace", "iosfarm") if o["kind"] != "Namespace" else "iosfarm",
                             "iosfarm")
            spec = o.get("spec", {}).get("template", {}).get("spec")
            for c in (spec or {}).get("containers", []):
                self.assertTrue(c["image"].endswith(f":{version}"), c["image"])

    def test_healthcheck_against_a_real_server(self):
        script = path("docker", "iosfarm-healthcheck")
        if not SERVER_BINARY or not os.access(SERVER_BINARY, os.X_OK):
            self.skipTest("no --server-binary: health check not run against a server")
        has_grpc = subprocess.run(["/usr/bin/python3", "-c", "import grpc"], capture_output=True).returncode == 0
        if not has_grpc:
            self.skipTest("python3-grpcio not installed (the server image has it): live health check skipped")
        with tempfile.TemporaryDirectory() as tmp:
            server = subprocess.Popen([SERVER_BINARY, "--listen", "127.0.0.1:0", "--db",
                                       os.path.join(tmp, "farm.db"), "--log-level", "warn"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                line = server.stdout.readline()  # "listening on 127.0.0.1:PORT"
                self.assertTrue(line.startswith("listening on "), f"server said {line!r}")
                address = line.split()[-1]
                ok = subprocess.run([script, address], capture_output=True, text=True, timeout=30)
                self.assertEqual(ok.returncode, 0, ok.stderr)
            finally:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
                server.stdout.close()
            down = subprocess.run([script, address, "--timeout", "1"], capture_output=True, text=True, timeout=30)
            self.assertEqual(down.returncode, 1, "a stopped server must fail the check")
            usage = subprocess.run([script, "--no-such-flag"], capture_output=True, text=True, timeout=30)
            self.assertEqual(usage.returncode, 2)


def main():
    global SOURCE, SERVER_BINARY
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", default=SOURCE)
    parser.add_argument("--server-binary", default="")
    args, rest = parser.parse_known_args()
    SOURCE, SERVER_BINARY = os.path.abspath(args.source_dir), args.server_binary
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
