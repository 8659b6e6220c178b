"""Mutation checks: each plausible bug below, put into the code one at a time, must fail a
test; the file is restored after each.

    python tests/mutations.py [PYTHON]

Not collected by pytest (it rewrites package files while it runs: never run it beside
other work on the same checkout). Prints one line per mutation: caught (with the test that
failed) or NOT CAUGHT; exits 1 if any is not caught.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..") + os.sep
PY = sys.argv[1] if len(sys.argv) > 1 else sys.executable
MUTATIONS = [
    ("border reflection off by one (right/bottom)", "vidcorr/readout/kernel/blend.py",
     "out.append(tf.where(v > last, 2.0 * last - v, v))", "out.append(tf.where(v > last, 2.0 * last - v + 1.0, v))",
     "tests/readout/kernel/test_blend.py"),
    ("smoothing pads like reflect, not symmetric", "vidcorr/readout/kernel/smoothing.py",
     "tf.where(m < n, m, period - 1 - m)", "tf.where(m < n, m, period - m)",
     "tests/readout/kernel/test_smoothing.py"),
    ("x and y scales swapped under max_size", "vidcorr/readout/matching.py",
     "sx, sy = w / float(nw), h / float(nh)", "sy, sx = w / float(nw), h / float(nh)",
     "tests/readout/test_matching.py"),
    ("no half-pixel convention under max_size", "vidcorr/readout/matching.py",
     "to_orig = lambda xy: np.stack([(xy[..., 0] + 0.5) * sx - 0.5,", "to_orig = lambda xy: np.stack([(xy[..., 0] + 0.0) * sx - 0.0,",
     "tests/readout/test_matching.py"),
    ("a match leaving the image stays valid", "vidcorr/readout/matching.py",
     "inside = np.all((pos >= -0.5) & (pos <= np.array([w, h], np.float64) - 0.5), axis=(1, 2))",
     "inside = np.all((pos >= -5.5) & (pos <= np.array([w, h], np.float64) + 4.5), axis=(1, 2))",
     "tests/readout/test_matching.py"),
    ("no minimum-size clamp under max_size", "vidcorr/readout/matching.py",
     "nh, nw = max(MIN_SIZE, int(round(h * scale))), max(MIN_SIZE, int(round(w * scale)))",
     "nh, nw = int(round(h * scale)), int(round(w * scale))",
     "tests/readout/test_matching.py"),
    ("the unwarp adds the field with the wrong sign", "vidcorr/readout/kernel/blend.py",
     "q += sample_at(fields[..., f, :], q)", "q -= sample_at(fields[..., f, :], q)",
     "tests/readout/kernel/test_blend.py"),
    ("the unwarp samples the field at the unwarped pixel, not the found one", "vidcorr/readout/kernel/blend.py",
     "q += sample_at(fields[..., f, :], q)", "q += sample_at(fields[..., f, :], pixels + 0.0 * q)",
     "tests/readout/kernel/test_blend.py"),
    ("texture from the larger eigenvalue", "vidcorr/readout/confidence.py",
     "return np.maximum(half_trace - root, 0.0)", "return np.maximum(half_trace + root, 0.0)",
     "tests/readout/test_confidence.py"),
    ("served flow t+2 -> t instead of t -> t+2", "vidcorr/apps/serving.py",
     '"flow": tf.identity(position[..., 1, :] - position[..., 0, :], "flow"),',
     '"flow": tf.identity(position[..., 0, :] - position[..., 1, :], "flow"),',
     "tests/apps/test_serving.py::test_the_packaged_model_served_recovers_a_known_motion"),
]


def main():
    missed = 0
    backup = os.path.join(tempfile.mkdtemp(prefix="mutations-"), "original.py")
    for name, path, old, new, tests in MUTATIONS:
        full = ROOT + path
        with open(full) as f:
            src = f.read()
        if old not in src:
            print("%s: NOT APPLIED (the code changed: update this mutation)" % name)
            missed += 1
            continue
        shutil.copy(full, backup)
        try:
            with open(full, "w") as f:
                f.write(src.replace(old, new, 1))
            proc = subprocess.run([PY, "-m", "pytest", "-q", "-x"] + tests.split(), cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, env=dict(os.environ, PYTHONPATH=ROOT))
        finally:
            shutil.copy(backup, full)
        failed = [line[7:] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
        caught = proc.returncode != 0 and failed
        missed += not caught
        print("%s: %s" % (name, "caught by " + failed[0].split(" - ")[0] if caught
                                 else "NOT CAUGHT"), flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
