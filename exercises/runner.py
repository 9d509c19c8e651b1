# SPDX-License-Identifier: MIT
"""The grader's child: runs one student's exercise file, alone, in the sandbox check.py starts.

It knows no case, no expected value, no tolerance and no verdict. check.py sends it requests
and it answers each with data:

    ["load", hand_in]               -> ["loaded", None or why the file cannot be loaded]
    ["find", name]                  -> ["found", "ok", "missing" or "unwritten", parameters]
    ["call", name, args, kwargs, leaves, grad_enabled, rng]
                                    -> ["returned", result, leaves after the call, rng]
                                       or ["raised", type name, message, rng]
    ["grad", grads of the outputs]  -> ["grads", the gradient of each leaf, or None]

`leaves` are the tensors of the arguments (plain tensors, and the parameters and buffers of a
module such as an Agent), sent once and named by their place; a module is rebuilt here from its
class in the student's file (or torch.nn) and its leaves. "grad" is the backward pass of the
last call's outputs, which stay here with their graph. check.py decodes what comes back
(encode()/decode() below, shared by both sides) and judges it in its own process.

The hand-in comes as text, a .py file's or a notebook's: reading the functions out of a notebook,
parsing and compiling happen here, on the student's time and within their memory, never in the
grader. Sandboxed, the child refuses to start as root or with any capability, as it sees itself;
the grader checks the same from the host's side.
"""

import ast
import base64
import contextlib
import gc
import inspect
import io
import json
import linecache
import math
import os
import re
import resource
import signal
import sys
import textwrap
import types
import warnings

import numpy
import torch

DEPTH = 32  # how deep a value may nest (a tuple of lists of ...)
CONTAINERS = 1 << 16  # lists and dicts in one message: 4 MiB of [[]] took the grader 14 s, 1 GB
MESSAGE_LIMIT = 1 << 22  # bytes in one message from the child (the largest case needs 1 MiB)
CODE_LIMIT = 1 << 18  # characters of code a hand-in may hold (a .py file, a notebook's cells)
FILES = 64  # files the child may hold open: with RLIMIT_FSIZE, a bound on memory in files


# ---- values as JSON: tensors, numbers, strings, tuples, lists, dicts; anything else by name ----
def encode(value, depth=0):
    if depth > DEPTH:
        return {"object": "value nested too deep"}
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            return {"object": f"tensor of {dtype}"}
        raw = value.detach().cpu().reshape(-1).numpy().tobytes()
        spec = [dtype, list(value.shape), base64.b64encode(raw).decode(), value.requires_grad]
        return {"tensor": spec}
    if type(value).__module__ == "numpy" and hasattr(value, "shape") and value.ndim:
        return {"ndarray": [str(value.dtype), list(value.shape)]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): encode(v, depth + 1) for k, v in value.items()}}
    if isinstance(value, float) and value != value:
        return {"float": "nan"}
    if isinstance(value, float) and abs(value) == float("inf"):
        return {"float": "inf" if value > 0 else "-inf"}
    if value is None or type(value) in (bool, int, float, str):
        return value
    return {"object": type(value).__name__}


class Opaque:
    """What came back that is not data (a module, a generator...): its type's name alone."""

    def __init__(self, name):
        self.name = name


class Array:
    """A numpy array that came back: its dtype and shape (train() needs a tensor)."""

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = tuple(shape)


DTYPES = {  # the dtypes a tensor may have on its way, as numpy names them
    name: name for name in ("float32", "float64", "float16", "int64", "int32", "int16", "int8")
}
DTYPES |= {"uint8": "uint8", "bool": "bool"}


def decode_tensor(spec):
    dtype, shape, data, requires_grad = spec
    if dtype not in DTYPES or not all(type(n) is int and 0 <= n < 1 << 31 for n in shape):
        raise ValueError(f"a tensor of dtype {dtype} and shape {shape}")
    if len(shape) > DEPTH or math.prod(max(n, 1) for n in shape) > MESSAGE_LIMIT:
        raise ValueError(f"a tensor of shape {shape}")  # (10**9, 0): no data, a list a row
    raw = base64.b64decode(data, validate=True)
    array = numpy.frombuffer(raw, dtype=DTYPES[dtype])  # ValueError if not whole items
    tensor = torch.from_numpy(array.reshape(shape).copy())  # ValueError if not its shape
    if requires_grad is True and tensor.is_floating_point():
        tensor.requires_grad_()
    return tensor


def decode(value, depth=0):
    """A value from its JSON form; ValueError for what encode() never writes."""
    if depth > DEPTH + 1:
        raise ValueError("a value nested too deep")
    if isinstance(value, list):
        return [decode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if len(value) != 1:
            raise ValueError("a dict that is not a value")
        ((kind, body),) = value.items()
        if kind == "tensor":
            return decode_tensor(body)
        if kind == "tuple" and isinstance(body, list):
            return tuple(decode(v, depth + 1) for v in body)
        if kind == "dict" and isinstance(body, dict):
            return {str(k): decode(v, depth + 1) for k, v in body.items()}
        if kind == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if kind == "object" and isinstance(body, str):
            return Opaque(body)
        if kind == "ndarray" and isinstance(body, list) and len(body) == 2:
            dtype, shape = body
            if not (isinstance(shape, list) and len(shape) <= DEPTH):  # numpy's own: 64 at most
                raise ValueError("an array of too many dimensions")
            if not all(type(n) is int and 0 <= n < 1 << 63 for n in shape):
                raise ValueError("an array of no shape")
            return Array(str(dtype), shape)
        raise ValueError(f"an unknown kind of value: {kind}")
    if value is None or type(value) in (bool, int, float, str):
        return value
    raise ValueError("not a value")


def dumps(message):
    return json.dumps(message, allow_nan=False).encode()


def loads(data):
    """A message, refused (ValueError) where it nests deeper than any value may (json's own
    parser recurses) or holds more lists and dicts than any answer needs: counted first,
    outside strings. The strings are cut out by a regular expression and the brackets left
    counted by numpy: a loop in Python over each byte took 35 ms a MiB, this takes 7 ms, and
    the grader reads some 5 MiB of answers from each child of ppo_continuous.py."""
    brackets = STRING.sub(b"", data).translate(None, NOT_BRACKETS)
    opens = numpy.isin(numpy.frombuffer(brackets, numpy.uint8), OPENS)
    depth = numpy.cumsum(numpy.where(opens, 1, -1))
    too_deep = numpy.flatnonzero(opens & (depth > 2 * DEPTH + 8))
    too_many = numpy.flatnonzero(opens & (numpy.cumsum(opens) > CONTAINERS))
    if too_deep.size and not (too_many.size and too_many[0] < too_deep[0]):
        raise ValueError("a message nested too deep")
    if too_many.size:
        raise ValueError("a message of too many values")
    # as text: json.loads(bytes) also reads UTF-16 and UTF-32, whose brackets and quotes these
    # counts, made on UTF-8's bytes, do not see ("∀" in UTF-16 holds a quote's byte)
    return json.loads(data.decode("utf-8"))


# A string: from its quote to the next quote no backslash escapes, or to the message's end
STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
OPENS = numpy.array(list(b"[{"), numpy.uint8)


# ---- the student's file ---------------------------------------------------------------------
@contextlib.contextmanager
def quiet():
    """What the student's code prints or warns goes nowhere."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        yield


def find(module, name):
    """module.NAME, or module.Class.method for "Class.method"; None if it is not there."""
    found = module
    for part in name.split("."):
        found = getattr(found, part, None)
    return found if callable(found) else None


def unwritten(fn):
    """Whether fn's body is still only its docstring and `raise NotImplementedError(...)`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def why(error):
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class Child:
    """The student's module, and the last call's leaves and outputs (for "grad")."""

    def __init__(self):
        self.module = None
        self.leaves = []
        self.outputs = []

    def load(self, hand_in):
        """The student's module, from the text of their file or notebook (hand_in: "name",
        "text", and "notebook", what reading a notebook needs, or None)."""
        try:
            with quiet():
                text = hand_in["text"]
                if hand_in["notebook"]:
                    text = from_notebook(text, **hand_in["notebook"])
                path = f"/grading/{hand_in['name']}"
                code = compile(text, path, "exec")
                linecache.cache[path] = (len(text), None, text.splitlines(True), path)
                module = types.ModuleType("student")
                module.__file__ = path
                sys.modules["student"] = module  # as an import would: dataclasses look it up
                exec(code, module.__dict__)
        except BaseException as error:  # an import that fails, code that raises at its top
            return ["loaded", str(error) if isinstance(error, Refused) else why(error)]
        self.module = module
        return ["loaded", None]

    def find(self, name):
        with quiet():
            fn = find(self.module, name)
            if fn is None:
                return ["found", "missing", []]
            if unwritten(fn):
                return ["found", "unwritten", []]
            try:
                parameters = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                parameters = []
        return ["found", "ok", [str(p) for p in parameters]]

    def build(self, value, leaves):
        """An argument from its JSON form: {"leaf": i} is the i-th tensor sent, a module is
        rebuilt from its class (the student's, or torch.nn's) and its leaves."""
        if isinstance(value, dict) and "leaf" in value:
            return leaves[value["leaf"]]
        if isinstance(value, dict) and "module" in value:
            origin, name, training, parameters, buffers, children, plain = value["module"]
            owner = torch.nn if origin == "nn" else self.module
            cls = getattr(owner, name, None)
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
                raise TypeError(f"no class {name} in the file")
            module = cls.__new__(cls)
            torch.nn.Module.__init__(module)
            for key, i in parameters.items():
                leaves[i] = torch.nn.Parameter(leaves[i].detach(), leaves[i].requires_grad)
                module.register_parameter(key, leaves[i])
            for key, i in buffers.items():
                module.register_buffer(key, leaves[i])
            for key, child in children.items():
                module.add_module(key, self.build(child, leaves))
            for key, item in plain.items():
                setattr(module, key, item)
            module.train(training)
            self.owners += [(module, key, i) for key, i in {**parameters, **buffers}.items()]
            return module
        if isinstance(value, list):
            return [self.build(v, leaves) for v in value]
        if isinstance(value, dict) and "tuple" in value:
            return tuple(self.build(v, leaves) for v in value["tuple"])
        return decode(value)

    def call(self, name, args, kwargs, leaves, grad_enabled, rng):
        leaves = [decode_tensor(leaf["tensor"]) for leaf in leaves]
        self.owners = []
        args = self.build(args, leaves)
        kwargs = {str(k): self.build(v, leaves) for k, v in kwargs.items()}
        torch.set_rng_state(decode_tensor(rng["tensor"]))
        self.leaves, self.outputs = [], []
        try:
            with quiet(), torch.set_grad_enabled(bool(grad_enabled)):
                result = find(self.module, name)(*args, **kwargs)
        except BaseException as error:  # KeyboardInterrupt, SystemExit...: a failed case
            return ["raised", type(error).__name__, str(error), encode(torch.get_rng_state())]
        after = list(leaves)
        for module, key, i in self.owners:  # what a method left in its module
            after[i] = getattr(module, key, None)
        self.leaves = leaves
        self.outputs = [t for t in flat(result) if isinstance(t, torch.Tensor)]
        return [
            "returned",
            encode(result),
            [encode(t) for t in after],
            encode(torch.get_rng_state()),
        ]

    def grad(self, grads):
        grads = [None if g is None else decode_tensor(g["tensor"]) for g in grads]
        pairs = [
            (out, g)
            for out, g in zip(self.outputs, grads, strict=False)
            if g is not None and out.requires_grad
        ]
        wanted = [leaf for leaf in self.leaves if leaf.requires_grad]
        found = {}
        if pairs and wanted:
            try:
                with quiet():
                    outs, gs = zip(*pairs, strict=True)
                    got = torch.autograd.grad(
                        outs, wanted, gs, retain_graph=True, allow_unused=True
                    )
            except BaseException as error:
                return ["raised", type(error).__name__, str(error), None]
            found = {id(leaf): g for leaf, g in zip(wanted, got, strict=True)}
        return [
            "grads",
            [None if found.get(id(x)) is None else encode(found[id(x)]) for x in self.leaves],
        ]


class Refused(Exception):
    """A hand-in that is not what it should be: its message is the student's line."""


# ---- a notebook: its functions read out of the file, nothing of it run but those ---------------
def from_notebook(text, rung, tops, others, template):
    """exercises/RUNG.py's text (template) with a notebook's functions of the rung in place of its
    blanks: each read from the last code cell that defines it (tops: the rung's) before the rung's
    check cell, with the notebook's imports (each may fail: plotting has no place to write), its
    own helper functions and plain constants (others: every rung's functions, which are not)."""
    try:
        cells = json.loads(text)["cells"]
        sources = [
            "".join(c["source"]) if isinstance(c["source"], list) else str(c["source"])
            for c in cells
            if isinstance(c, dict) and c.get("cell_type") == "code"
        ]
    except (ValueError, TypeError, KeyError, RecursionError):
        raise Refused("not a notebook (.ipynb) that can be read") from None
    sources = ["\n".join(line for line in s.splitlines() if line[:1] not in "%!") for s in sources]
    if sum(len(source) for source in sources) > CODE_LIMIT:
        raise Refused(f"its code cells hold over {CODE_LIMIT:,} characters")
    helpers, solutions = [], []
    for top in tops:
        checks = [i for i, s in enumerate(sources) if f'notebook_check("{rung}", "{top}' in s]
        end = checks[0] if checks else len(sources)
        found = [i for i, s in enumerate(sources[:end]) if defines(s, top)]
        if found:
            solutions.append(kept(sources[found[-1]], set(others) - {top}))
    for source in sources:
        lines = source.splitlines()
        with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
            for node in ast.parse(source).body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    helpers.append(f"try:\n    {ast.unparse(node)}\nexcept Exception:\n    pass")
                elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name not in others:
                    helpers.append(segment(lines, node))
                elif constant(node):
                    helpers.append(exact(lines, node))  # the statement alone, not its line
    return "\n\n\n".join([template, *helpers, *solutions]) + "\n"


def defines(source, top):
    return any(
        line.startswith((f"def {top}(", f"class {top}(", f"class {top}:"))
        for line in source.splitlines()
    )


def kept(source, others):
    """A solution cell's imports, functions, classes and plain constants (not the lines that
    file it into the notebook's namespaces); the whole cell where it does not parse, so its
    error shows."""
    try:
        nodes = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    lines = source.splitlines()
    return "\n\n".join(
        exact(lines, node) if constant(node) else segment(lines, node)  # K = 1; more: K = 1
        for node in nodes
        if (isinstance(node, keep) or constant(node)) and getattr(node, "name", None) not in others
    )


def constant(node):
    """Whether a statement is NAME = a plain constant (None, a bool, a number, a string), such
    as a notebook's own check sends along with a function that uses it."""
    if not (isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)):
        return False
    try:
        value = ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return value is None or type(value) in (bool, int, float, str)


def segment(lines, node):
    """The lines of a top-level statement, decorators included (ast.get_source_segment reads
    the whole cell again for each: slow on a cell of many)."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[first - 1 : node.end_lineno])


def exact(lines, node):
    """The source of one statement alone, as written (its offsets count UTF-8 bytes): a
    constant is never converted to text again, which a long int cannot be."""
    first = lines[node.lineno - 1].encode()
    if node.lineno == node.end_lineno:
        return first[node.col_offset : node.end_col_offset].decode()
    last = lines[node.end_lineno - 1].encode()[: node.end_col_offset].decode()
    middle = lines[node.lineno : node.end_lineno - 1]
    return "\n".join([first[node.col_offset :].decode(), *middle, last])


def flat(value, depth=0):
    """The tensors and other leaves of a result, in order."""
    if isinstance(value, (tuple, list)) and depth <= DEPTH:
        return [leaf for v in value for leaf in flat(v, depth + 1)]
    if isinstance(value, dict) and depth <= DEPTH:
        return [leaf for v in value.values() for leaf in flat(v, depth + 1)]
    return [value]


def unprivileged(status="/proc/self/status"):
    """Whether the process whose status file this is holds no privilege: no user or group of
    its is root, and no capability set holds any. The grader reads it of the child too, from
    the host's side, where the ids are the host's."""
    with open(status) as lines:
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
    ids = fields["Uid"].split() + fields["Gid"].split()
    sets = [fields[name] for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")]
    return "0" not in ids and not any(int(value, 16) for value in sets)


def main():
    """Requests on fd 0, answers on fd 1 (each message: 4 bytes of length, then JSON); what the
    student's code prints goes nowhere. The limits are set before the student's file loads."""
    from multiprocessing.connection import Connection

    memory, seconds, sandboxed = (int(x) for x in sys.argv[1:4])
    if sandboxed and not unprivileged():
        sys.exit(3)  # deny by default: a sandbox that would not hold runs nothing
    # Torch's objects (some 290,000) live as long as the child. Frozen, they are never scanned
    # by the garbage collector again, while the student's code runs or as Python ends. That
    # saves 0.2 s of a core in each child, and the grader starts one for each student and rung.
    gc.freeze()
    requests = Connection(os.dup(0), writable=False)
    answers = Connection(os.dup(1), readable=False)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    torch.set_num_threads(1)
    if memory > 0:  # bytes the student's code may add to what python and torch hold now:
        # all its address space (RLIMIT_AS), shared mappings included, not its data alone
        with open("/proc/self/status") as status:
            (line,) = [line for line in status if line.startswith("VmSize:")]
        used = int(line.split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (used + memory, used + memory))
        # memory no mapping shows (a memfd, a file in a tmpfs): each file at most its share
        # of the limit, and few files, where no cgroup of the grader's counts it
        resource.setrlimit(resource.RLIMIT_FSIZE, (memory // FILES, memory // FILES))
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past it, an error, not the end
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))  # a loop in C ends too
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    child = Child()
    answers.send_bytes(dumps(["ready"]))
    while True:
        try:  # the grader's requests: a hand-in may be a notebook of many MiB
            kind, *rest = json.loads(requests.recv_bytes())
        except EOFError:
            return
        reply = getattr(child, kind)(*rest)
        try:
            answers.send_bytes(dumps(reply))
        except ValueError:  # a value JSON cannot carry (nan in a name...): say so, as data
            answers.send_bytes(
                dumps(["raised", "ValueError", "an answer that cannot be sent", None])
            )


if __name__ == "__main__":
    main()
