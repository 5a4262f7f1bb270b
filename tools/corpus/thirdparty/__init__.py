"""Programs written by third parties (flax's examples, MaxText, ...), compiled as corpus cells.

A cell whose program has family "thirdparty:<module>" is built by
`corpus.thirdparty.<module>.build_program(prog, mesh)` instead of `corpus.models.build_program`,
with the same return contract:

  (functions, draws, facts)
    functions: list of (jit_name, jitted_fn, abstract_args, role), role "train" / "init" / "eval"
    draws:     an object like models.Draws: a `sites` list (worker.py clears it before lowering
               each function) and `summary()` -> {"sites", "per_step", "draws": [{"scope",
               "shape", "bits", "kind", "executions_per_step"}, ...]}. Third-party programs'
               draws are counted from their source (see each module), not recorded while tracing.
    facts:     dict merged into program.json's "model"; its optional key "program_json" (a dict)
               is merged into program.json's top level instead (e.g. "thirdparty": where the
               source came from, "optimizer", "donate_argnums").

Third-party source is never vendored into this repository: each module reads it at a pinned
commit from a source tree given by an environment variable (gen_dumps.py's --thirdparty-src
NAME=PATH sets it), and skips its cells with a clear message when none is given.
"""

import importlib
import os

PREFIX = "thirdparty:"


def is_thirdparty(prog):
    return str(prog.get("family", "")).startswith(PREFIX)


def module_name(prog):
    return prog["family"][len(PREFIX):]


def program_module(prog):
    """The module whose build_program(prog, mesh) builds this program: corpus.models, or
    corpus.thirdparty.<module> for family "thirdparty:<module>"."""
    if is_thirdparty(prog):
        return importlib.import_module("corpus.thirdparty." + module_name(prog))
    return importlib.import_module("corpus.models")


def source_env(name):
    """The environment variable holding the source tree of third-party source NAME."""
    return "SPMDSIM_%s_SRC" % name.upper().replace("-", "_")


def missing_source(prog):
    """Why a third-party program cannot be built here (its source tree is not given), or None.
    prog["thirdparty"]["source"] names the source (e.g. "flax"): gen_dumps.py's
    --thirdparty-src NAME=PATH or the environment variable source_env(NAME) gives its path."""
    src = (prog.get("thirdparty") or {}).get("source") if is_thirdparty(prog) else None
    if not src:
        return None
    path = os.environ.get(source_env(src))
    if not path:
        return ("%s source not given (--thirdparty-src %s=PATH or %s)"
                % (src, src, source_env(src)))
    if not os.path.exists(path):
        return "%s source %s does not exist" % (src, path)
    return None
