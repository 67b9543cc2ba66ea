"""truth.md, the summary gpu_run.py writes beside truth.json: one line per
check, in the order the steps ran."""
import exact_step
import search_step


def summary(doc):
    """truth.md: one line per check."""
    lines = [f"# gpu_run ({doc['backend']}, started {doc['started']}, "
             f"{doc.get('elapsed_s', 0):.0f} s)", ""]
    bundle = doc.get("bundle", {})
    if "commit" in bundle:
        lines.append(f"bundle: commit {bundle['commit'][:10]} of {bundle['date']}"
                     f"{' (dirty)' if bundle.get('dirty') else ''}")
    for name, step in doc["steps"].items():
        status = step.get("status")
        if "error" in step and name != "farm":
            lines.append(f"- {name}: {status}: {step['error']}")
            continue
        if name == "env":
            lines.append(f"- env: {step.get('nvidia_smi')}; {step.get('nvcc')}; "
                         f"cuDNN {step.get('cudnn_files')}; torch {step.get('torch')}")
        elif name == "floor" and status == "ok":
            lines.append("- floor (us): " + ", ".join(
                f"{k[:-3]} {v:.2f}" for k, v in step.items() if k.endswith("_us")))
        elif name == "tests":
            for binary, s in step.get("suites", {}).items():
                if "reason" in s:
                    lines.append(f"- {binary}: {s.get('status')}: {s['reason']}")
                    continue
                lines.append(f"- {binary}: {s.get('status')}, {s.get('passed')} passed, "
                             f"{s.get('failed')} failed, {s.get('skipped')} skipped")
                for failure in s.get("failures", [])[:10]:
                    lines.append(f"  - FAILED {failure['test']}: "
                                 f"{failure['message'].splitlines()[0] if failure['message'] else ''}")
        elif name == "zoo":
            for model, rows in step.get("models", {}).items():
                for mode, r in rows.items():
                    lines.append(f"- zoo {model} {mode}: {r.get('status')}, verified "
                                 f"{r.get('verified')}, max |dev - cpu| "
                                 f"{r.get('max_abs_error_vs_cpu', float('nan')):.2e}, "
                                 f"{r.get('median_ms')} ms, {r.get('stages')} stages"
                                 + (f", {r['mismatches']}" if r.get("mismatches") else ""))
        elif name == "search":
            lines.extend(search_step.summary_lines(step))
        elif name == "exact":
            lines.extend(exact_step.summary_lines(step))
        elif name == "runtime":
            lines.append(f"- runtime: {status}, {step.get('summary')}")
        elif name == "kernels" and status in ("ok", "failed"):
            lines.append(f"- kernels: {status}, {step.get('model')}")
            for side in ("iosfarm", "torch"):
                s = step.get(side, {})
                if "total_us" not in s:
                    lines.append(f"  - {side}: exit {s.get('exit')}, {s.get('kernels')} kernels")
                    continue
                lines.append(f"  - {side}: {s['count']} kernels, {s['total_us']:.1f} us; most: "
                             + "; ".join(f"{k['total_us']:.1f} us x{k['count']} {k['kernel'][:60]}"
                                         for k in s["top"][:5]))
        elif name == "farm":
            lines.append(f"- farm: {status}, GPU phases {step.get('gpu_phases')}, overlaps "
                         f"{step.get('gpu_overlaps')}" + (f", {step['error']}"
                                                         if step.get("error") else ""))
            if step.get("profile_breakdown"):
                lines.append(f"  - worker's ms per profiled stage: {step['profile_breakdown']}")
            for job, seconds in step.get("phase_seconds", {}).items():
                lines.append(f"  - job {job} seconds: " +
                             ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))
            for job, row in step.get("jobs", {}).items():
                lines.append(f"  - {job}: {row.get('state')}, profiled {row.get('profiled_stages')}"
                             f" stages, measured {row.get('measured_ms')}, predicted "
                             f"{row.get('predicted_ms')}" + (f", {row['error']}"
                                                             if row.get("error") else ""))
            if "tune" in step:
                lines.append(f"  - tune: exit {step['tune']['exit']}: "
                             + " | ".join(step["tune"]["output"][-4:]))
        else:
            lines.append(f"- {name}: {status}" + "".join(
                f", {k} {step[k]}" for k in ("passed", "failed", "skipped", "reason", "exit")
                if k in step))
    return "\n".join(lines) + "\n"
