"""The spmdsim binary: where it is, and running one of its commands for its JSON.

The C++ binary is the engine; this module only starts it. Its exit codes (README.md) map
to exceptions: 2 (usage or I/O) to SpmdsimError, 3 (input that cannot be parsed) to
SpmdsimParseError. Exit 1 (a check failed) is a result, not an error, and is returned.
"""

import json
import os
import shutil
import subprocess

# The JSON layout this package reads (docs/JSON_SCHEMA.md, `schema_version`).
SCHEMA_VERSION = 1


class SpmdsimError(RuntimeError):
    """spmdsim could not run the command: bad arguments, a file it cannot read (exit 2)."""

    def __init__(self, message, returncode=2, stderr=""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class SpmdsimParseError(SpmdsimError):
    """An input is not HLO text spmdsim can read (exit 3); `stderr` has file:line:col."""


def binary_path():
    """The spmdsim executable: $SPMDSIM_BINARY, else the one installed with this package, else
    `spmdsim` on PATH."""
    env = os.environ.get("SPMDSIM_BINARY")
    if env:
        if not os.access(env, os.X_OK):
            raise SpmdsimError("SPMDSIM_BINARY=%s is not an executable file" % env)
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "spmdsim")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("spmdsim")
    if found:
        return found
    raise SpmdsimError(
        "the spmdsim binary is not installed with this package (%s) and not on PATH: install the "
        "package with `pip install .` from the repository, or set SPMDSIM_BINARY" % here)


def run(args, check=True):
    """Runs `spmdsim ARGS...`; returns (returncode, stdout, stderr). With `check`, exits 2 and 3
    raise."""
    cmd = [binary_path()] + [str(a) for a in args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          encoding="utf-8", errors="replace")
    if check and proc.returncode not in (0, 1):
        first = proc.stderr.strip().splitlines()
        message = "spmdsim %s: %s" % (args[0] if args else "", first[-1] if first else
                                      "exit %d" % proc.returncode)
        cls = SpmdsimParseError if proc.returncode == 3 else SpmdsimError
        raise cls(message, proc.returncode, proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr


def run_json(args):
    """Runs a command with `--format json` and returns (its JSON, returncode, stderr)."""
    rc, out, err = run(list(args) + ["--format", "json"])
    try:
        doc = json.loads(out)
    except ValueError as e:
        raise SpmdsimError("spmdsim %s printed no JSON (%s): %s" % (args[0], e, err.strip()),
                           rc, err)
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SpmdsimError("spmdsim %s wrote schema_version %r; this package reads %d" %
                           (args[0], version, SCHEMA_VERSION), rc, err)
    return doc, rc, err
