"""The oldest Python the package works with, stated once in pyproject.toml
(requires-python), is the real one: the newest C API name, PyArg/Py_BuildValue
format unit or Python syntax the package uses appeared in exactly that
version.

Only one Python 3 can be had on the machines that test this (Debian 12 has
3.11), so the extension cannot be built against the oldest one.  Instead, every
C API name the extension's sources use must be in C_API below, with the
version that added it as CPython's C API reference says it ("Added in version
3.10"; names there since Python 3.0 are 3.0).  A new name fails the test until
it is added there, with its version: a name newer than the stated minimum then
fails it again, until requires-python is raised (or the name replaced).  The
Python modules and stubs are parsed with ast's feature_version at the minimum
(a match statement would need 3.10, except* 3.11); test_types runs mypy with
--python-version at the minimum, which knows which standard library names each
version has."""
import ast
import glob
import os
import re

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Every C API name the extension uses: the version that added it.
C_API = {
    # 3.10: the strong-reference helpers and the module attribute that does not steal
    "Py_NewRef": (3, 10), "Py_XNewRef": (3, 10), "PyModule_AddObjectRef": (3, 10),
    # 3.3: str's cached UTF-8 (PyUnicode_AsUTF8)
    "PyUnicode_AsUTF8": (3, 3),
    # 3.2 and 3.1
    "PyLong_AsLongLongAndOverflow": (3, 2), "PyUnicode_DecodeFSDefault": (3, 2),
    "PyUnicode_FSConverter": (3, 1),
    # there since 3.0 (most since 2.x)
    **dict.fromkeys([
        "PY_SSIZE_T_CLEAN", "PyMODINIT_FUNC", "PyModuleDef", "PyModuleDef_HEAD_INIT",
        "PyModule_Create", "PyModule_AddIntConstant", "PyImport_ImportModule",
        "PyObject", "PyObject_HEAD", "PyVarObject_HEAD_INIT", "PyTypeObject", "PyType_Ready",
        "PyType_GenericNew", "Py_TPFLAGS_DEFAULT", "Py_TYPE", "PyObject_New", "PyObject_Free",
        "PyObject_TypeCheck", "PyObject_GetAttrString", "PyObject_Call", "PyObject_CallFunction",
        "PyMethodDef", "METH_O", "METH_NOARGS", "METH_VARARGS", "PySequenceMethods",
        "PyBufferProcs", "Py_buffer", "PyObject_GetBuffer", "PyBuffer_Release",
        "PyBUF_C_CONTIGUOUS", "PyBUF_FORMAT", "PyBUF_ND", "PyBUF_STRIDES",
        "Py_ssize_t", "Py_None", "Py_True", "Py_False", "Py_RETURN_NONE",
        "Py_DECREF", "Py_XDECREF", "Py_CLEAR", "Py_BEGIN_ALLOW_THREADS", "Py_END_ALLOW_THREADS",
        "PyArg_ParseTuple", "PyArg_ParseTupleAndKeywords", "Py_BuildValue",
        "PyErr_Format", "PyErr_SetString", "PyErr_SetObject", "PyErr_NoMemory",
        "PyErr_Occurred", "PyErr_Clear", "PyErr_CheckSignals", "PyExc_IndexError",
        "PyExc_KeyError", "PyExc_RuntimeError", "PyExc_TypeError", "PyExc_ValueError",
        "PyBool_Check", "PyIndex_Check", "PyNumber_Index", "PyNumber_Check", "PyComplex_Check",
        "PyFloat_AsDouble", "PyLong_FromLong",
        "PyLong_FromUnsignedLong", "PyLong_FromUnsignedLongLong", "PyLong_AsUnsignedLongLong",
        "PyBytes_Check", "PyBytes_AS_STRING", "PyBytes_GET_SIZE", "PyBytes_FromStringAndSize",
        "PyUnicode_Check", "PyUnicode_FromString", "PyUnicode_DecodeUTF8",
        "PyTuple_New", "PyTuple_Pack", "PyTuple_Check", "PyTuple_GET_ITEM", "PyTuple_GET_SIZE",
        "PyTuple_SET_ITEM", "PyList_New", "PyList_SET_ITEM", "PyDict_SetItemString",
        "PySequence_Fast", "PySequence_Fast_GET_ITEM", "PySequence_Fast_GET_SIZE",
        "PySequence_Tuple",
        "PyOS_snprintf", "PyOS_InterruptOccurred", "PyErr_SetInterrupt", "PyGILState_Ensure",
        "PyGILState_Release", "PyGILState_STATE", "PyBytes_FromString",
        "PyBuffer_IsContiguous", "PyExc_BufferError", "PyDict_New", "PyDict_Next",
        "PyDict_SetItem", "PyDict_Type", "PyFloat_Check", "PyFloat_FromDouble", "PyLong_Check",
        "PyLong_FromLongLong",
        # type slots
        "tp_name", "tp_basicsize", "tp_dealloc", "tp_flags", "tp_doc", "tp_methods", "tp_init",
        "tp_new", "tp_free", "tp_as_sequence", "tp_as_buffer", "sq_length",
    ], (3, 0)),
}

# The format units of PyArg_Parse* and of Py_BuildValue / PyObject_CallFunction
# the extension uses ("Parsing arguments and building values"): "p" and "$"
# (the keyword-only arguments follow) are 3.3's.
PARSE_UNITS = {"p": (3, 3), "$": (3, 3),
               **dict.fromkeys(["O", "O!", "i", "y", "y*", "s", "d", "|"], (3, 0))}
BUILD_UNITS = dict.fromkeys(["O", "N", "s", "i", "I", "K", "d", "y#"], (3, 0))

C_NAME = re.compile(r"\b(_?Py\w+|PY_\w+|METH_\w+|(?:tp|sq|mp|nb|bf|am)_\w+)\b")
FORMAT_CALL = re.compile(r"\b(PyArg_Parse\w*|Py_BuildValue|PyObject_CallFunction)\s*\(([^\"]*?)"
                         r"\"((?:[^\"\\]|\\.)*)\"")
UNIT = re.compile(r"[A-Za-z][#!&*]?|[|$]")


def minimum():
    """requires-python's version, as a tuple."""
    with open(os.path.join(PYTHON_DIR, "pyproject.toml")) as f:
        found = re.findall(r'^requires-python\s*=\s*">=(\d+)\.(\d+)"\s*$', f.read(), re.M)
    assert len(found) == 1, "pyproject.toml must say requires-python = \">=3.N\" once"
    return tuple(map(int, found[0]))


def c_sources():
    paths = sorted(glob.glob(os.path.join(PYTHON_DIR, "src", "*.[ch]")))
    assert paths, "no extension sources"
    texts = {}
    for p in paths:
        with open(p) as f:
            texts[os.path.basename(p)] = f.read()
    return texts


def code_only(text):
    """C text without comments, string literals and #include lines."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', '""', text)
    return re.sub(r"^\s*#\s*include[^\n]*", "", text, flags=re.M)


def used_names():
    """{C API name: the first source file using it}; the module's own init
    function (PyInit__native: its name is the module's) left out."""
    used = {}
    for name, text in c_sources().items():
        for n in C_NAME.findall(code_only(text)):
            used.setdefault(n, name)
    used.pop("PyInit__native", None)
    return used


def format_units():
    """[(family, unit, file)] of every format string the sources pass."""
    found = []
    for name, text in c_sources().items():
        for func, _, fmt in FORMAT_CALL.findall(text):
            family = "parse" if func.startswith("PyArg_") else "build"
            if family == "parse":
                fmt = re.split(r"[:;]", fmt, maxsplit=1)[0]
            for unit in UNIT.findall(fmt):
                found.append((family, unit, name))
    assert found, "no format strings found: the pattern is out of date"
    return found


def show(version):
    return ".".join(map(str, version))


def test_every_c_api_name_the_extension_uses_has_a_known_version():
    unknown = sorted(f"{n} ({f})" for n, f in used_names().items() if n not in C_API)
    assert not unknown, (
        f"C API names without a version in C_API: {', '.join(unknown)}: add each with the "
        "version CPython's C API reference gives it")


def test_every_format_unit_has_a_known_version():
    tables = {"parse": PARSE_UNITS, "build": BUILD_UNITS}
    unknown = sorted({f"{u!r} ({family}, {f})" for family, u, f in format_units()
                      if u not in tables[family]})
    assert not unknown, f"format units without a version: {', '.join(unknown)}"


def test_requires_python_is_the_newest_api_the_extension_uses():
    tables = {"parse": PARSE_UNITS, "build": BUILD_UNITS}
    needs = {n: C_API[n] for n in used_names() if n in C_API}
    needs.update({f"format unit {u!r}": tables[fam][u] for fam, u, _ in format_units()
                  if u in tables[fam]})
    newest = max(needs.values())
    floor = minimum()
    newest_names = sorted(n for n, v in needs.items() if v == newest)
    assert floor >= newest, (
        f"requires-python says >={show(floor)}, but the extension uses "
        f"{', '.join(n for n, v in sorted(needs.items()) if v > floor)} (Python {show(newest)})")
    assert floor == newest, (
        f"requires-python says >={show(floor)}, but nothing needs more than {show(newest)} "
        f"({', '.join(newest_names)}): lower it")


def test_the_python_sources_parse_with_the_minimum_grammar():
    floor = minimum()
    paths = sorted(glob.glob(os.path.join(PYTHON_DIR, "shardkit", "*.py")) +
                   glob.glob(os.path.join(PYTHON_DIR, "shardkit", "*.pyi")))
    assert len(paths) > 5
    for p in paths:
        with open(p) as f:
            ast.parse(f.read(), p, feature_version=floor)


def test_the_grammar_check_sees_newer_syntax():
    # what the test above relies on: feature_version refuses later syntax
    newer = "try:\n    pass\nexcept* ValueError:\n    pass\n"
    ast.parse(newer, feature_version=(3, 11))
    try:
        ast.parse(newer, feature_version=(3, 10))
    except SyntaxError:
        return
    raise AssertionError("ast.parse(feature_version=(3, 10)) accepted except*")


def test_the_name_scan_sees_what_the_sources_use():
    # names in comments and strings are not uses; names in code are
    code = code_only('/* Py_Nothing */ x = Py_NewRef(y); s = "PyFake"; // PyNot\n'
                     '#include <Python.h>\n')
    assert C_NAME.findall(code) == ["Py_NewRef"]
    assert {"Py_NewRef", "PyModule_AddObjectRef", "tp_init"} <= set(used_names())
