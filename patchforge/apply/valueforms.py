"""The work a block of code does, read as syntax trees with their spelling aside (`read_block`):
whether two loops add the same value where one writes it through a temporary and the other in
another order (`w = s * x[j] - t` / `y[j] += w` against `y[j] += x[j] * s - t`), or other work
(`w = x[j] - s` against `y[j] += s - x[j]`). Other work is said only where it is shown: upstream
does the fix's work with the value turned (one sum negated, one `/` swapped). Forms that differ
otherwise may be the same value in other algebra (`x[j] / s` against `x[j] * (1 / s)`) and read
as the same work, so that the caller stops rather than merge the work in twice.

Python lines are read with `ast`, C, C++ and HIP lines with a small expression parser of their
own; both give the same forms. A form keeps the order of what the order is the value of
(`-`, `/`, `%`, a shift, an index `x[i, j]`, a cast) and reads in any order what is not:
the terms of a sum (`a - b` is the terms `+a`, `-b`), the factors of a product (a factor's sign
taken out), `&`, `|`, `^`, `and`, `or`, `==`, a comparison's sides turned (`a > b` is
`b < a`), the arguments of a call (where a function's own arguments' order is its value is not
known here; where it is not, reading them apart would merge the same work twice). An update
`y += v`, `y -= v`, `y = y + v` is the terms it adds to `y`. A name set in the block is read as
its value where the block reads it. A line not read (a statement over several lines, a string
taken out, syntax not known here) leaves the block unread: the caller keeps its older reading.
"""
from __future__ import annotations

import ast
import re
from collections import Counter

from patchforge.patterns import on_first_use

# A form: nested tuples of strings and ints, compared and hashed as a whole.
Form = tuple


class _Unread(Exception):
    """A line or an expression this module does not read."""


def _whole(sign: int, form: Form) -> Form:
    return form if sign > 0 else ("neg", form)


def _key(item) -> str:
    return repr(item)


def _sum(terms: list[tuple[int, Form]]) -> tuple[int, Form]:
    """The signed form of a sum of signed `terms`: a single term alone; else the terms in
    order, the whole sum's sign taken out so that `a - b` and `-(b - a)` read alike."""
    flat: list[tuple[int, Form]] = []
    for sign, form in terms:
        if form[0] == "sum":
            flat.extend((sign * inner_sign, inner) for inner_sign, inner in form[1])
        else:
            flat.append((sign, form))
    if len(flat) == 1:
        return flat[0]
    plus = tuple(sorted(flat, key=_key))
    minus = tuple(sorted(((-sign, form) for sign, form in flat), key=_key))
    return (-1, ("sum", minus)) if _key(minus) < _key(plus) else (1, ("sum", plus))


def _product(factors: list[tuple[int, Form]]) -> tuple[int, Form]:
    sign, flat = 1, list[Form]()
    for factor_sign, form in factors:
        sign *= factor_sign
        flat.extend(form[1] if form[0] == "prod" else (form,))
    if len(flat) == 1:
        return sign, flat[0]
    return sign, ("prod", tuple(sorted(flat, key=_key)))


def _terms(form: Form) -> Counter:
    """The signed terms of a whole form: a sum's own, else the form as one term."""
    sign = 1
    if form[0] == "neg":
        sign, form = -1, form[1]
    if form[0] == "sum":
        return Counter((sign * s, f) for s, f in form[1])
    return Counter([(sign, form)])


def _factors(form: Form) -> Counter | None:
    if form[0] == "neg":
        form = form[1]
    return Counter(form[1]) if form[0] == "prod" else None


# Functions whose arguments read in any order are the same value anyway (`max(a, b)`), and
# those of one argument whose sign is not the value's (`abs(a - b)` is `abs(b - a)`).
_EVEN = frozenset(("abs", "fabs", "fabsf", "__habs", "absolute", "cosf", "cos", "cosh",
                   "coshf"))


def _call_name(form: Form) -> str:
    """The last part of a called name (`torch.abs`, `std::fabs` -> `abs`, `fabs`)."""
    if form[0] == "name":
        return form[1].rsplit("::", 1)[-1]
    if form[0] == ".":
        return form[2]
    return ""


class _Forms:
    """Builds forms, substituting the values of names set before (`values`) and writing down
    every subexpression's form (`seen`) and the names substituted (`read`)."""

    def __init__(self, values: dict[str, tuple[int, Form]]) -> None:
        self.values = values
        self.seen: list[Form] = []
        self.read: set[str] = set()

    def name(self, text: str) -> tuple[int, Form]:
        if text in self.values:
            self.read.add(text)
            return self.values[text]
        return 1, ("name", text)

    def note(self, value: tuple[int, Form]) -> tuple[int, Form]:
        self.seen.append(_whole(*value))
        return value

    def binary(self, op: str, left: tuple[int, Form], right: tuple[int, Form]) -> tuple[int, Form]:
        if op == "+":
            return _sum([left, right])
        if op == "-":
            return _sum([left, (-right[0], right[1])])
        if op == "*":
            return _product([left, right])
        if op == "/":
            return left[0] * right[0], ("/", left[1], right[1])
        if op == "**" and right == (1, ("num", "2.0")):
            return 1, ("**", left[1], right[1])
        if op in ("&", "|", "^", "and", "or", "==", "!="):
            items: list[Form] = []
            for side in (left, right):
                whole = _whole(*side)
                items.extend(whole[1] if whole[0] == op else (whole,))
            return 1, (op, tuple(sorted(items, key=_key)))
        if op in (">", ">="):
            op, left, right = {">": "<", ">=": "<="}[op], right, left
        return 1, (op, _whole(*left), _whole(*right))

    def call(self, function: tuple[int, Form], arguments: list[tuple[int, Form]],
             keywords: list[tuple[str, tuple[int, Form]]]) -> tuple[int, Form]:
        called = _call_name(function[1])
        if called in _EVEN and len(arguments) == 1 and not keywords:
            return 1, ("call", _whole(*function), (arguments[0][1],), ())
        return 1, ("call", _whole(*function),
                   tuple(sorted((_whole(*a) for a in arguments), key=_key)),
                   tuple(sorted((k, _whole(*v)) for k, v in keywords)))


def _number(text: str) -> Form:
    bare = text.rstrip("fFlLuU") if not text.lower().startswith("0x") else text
    try:
        return ("num", repr(float(bare)))
    except ValueError:
        return ("num", text)


# --- Python, through ast ----------------------------------------------------------------------

_PY_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
           ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@"}
_PY_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
               ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
               ast.NotIn: "not in"}


def _py_value(node: ast.AST, forms: _Forms) -> tuple[int, Form]:
    return forms.note(_py_value_of(node, forms))


def _py_value_of(node: ast.AST, forms: _Forms) -> tuple[int, Form]:
    if isinstance(node, ast.Name):
        return forms.name(node.id)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return 1, _number(repr(node.value))
        return 1, ("const", repr(node.value))
    if isinstance(node, ast.BinOp) and type(node.op) in _PY_OPS:
        return forms.binary(_PY_OPS[type(node.op)], _py_value(node.left, forms),
                            _py_value(node.right, forms))
    if isinstance(node, ast.UnaryOp):
        sign, form = _py_value(node.operand, forms)
        if isinstance(node.op, ast.USub):
            return -sign, form
        if isinstance(node.op, ast.UAdd):
            return sign, form
        return 1, ("not" if isinstance(node.op, ast.Not) else "~", _whole(sign, form))
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        value = _py_value(node.values[0], forms)
        for item in node.values[1:]:
            value = forms.binary(op, value, _py_value(item, forms))
        return value
    if isinstance(node, ast.Compare):
        if len(node.ops) == 1:
            return forms.binary(_PY_COMPARE[type(node.ops[0])], _py_value(node.left, forms),
                                _py_value(node.comparators[0], forms))
        return 1, ("chain", tuple(_PY_COMPARE[type(op)] for op in node.ops),
                   tuple(_whole(*_py_value(n, forms)) for n in [node.left, *node.comparators]))
    if isinstance(node, ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise _Unread
        return forms.call(_py_value(node.func, forms), [_py_value(a, forms) for a in node.args],
                          [(str(k.arg), _py_value(k.value, forms)) for k in node.keywords])
    if isinstance(node, ast.Attribute):
        return 1, (".", _whole(*_py_value(node.value, forms)), node.attr)
    if isinstance(node, ast.Subscript):
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        return 1, ("[]", _whole(*_py_value(node.value, forms)),
                   tuple(_whole(*_py_value(item, forms)) for item in items))
    if isinstance(node, ast.Slice):
        return 1, ("slice",) + tuple(None if part is None else _whole(*_py_value(part, forms))
                                     for part in (node.lower, node.upper, node.step))
    if isinstance(node, ast.IfExp):
        return 1, ("?", _whole(*_py_value(node.test, forms)), _whole(*_py_value(node.body, forms)),
                   _whole(*_py_value(node.orelse, forms)))
    if isinstance(node, (ast.Tuple, ast.List)):
        return 1, ("tuple", tuple(_whole(*_py_value(item, forms)) for item in node.elts))
    raise _Unread


_PY_OPENS = on_first_use(r"(?:if|elif|while|for|with|async\s+for|async\s+with)\b.*:$")
_PY_BARE = on_first_use(r"(?:else|try|finally|except\b.*)\s*:$")


def _py_statements(text: str, forms: _Forms) -> list[Form]:
    if _PY_BARE.match(text):
        return []
    opens = _PY_OPENS.match(text) is not None
    if opens:
        if text.startswith("elif"):
            text = text[2:]
        text += " pass"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        raise _Unread from None
    said = []
    for node in tree.body:
        said.append(_py_statement(node, forms))
        if isinstance(node, (ast.If, ast.While, ast.For)) and not opens:
            if node.orelse:
                raise _Unread
            said.extend(_py_statement(inner, forms) for inner in node.body)  # `if c: break`
    return said


def _py_statement(node: ast.stmt, forms: _Forms) -> Form:
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or node.value is None:
            raise _Unread
        return _set(forms, _py_target(targets[0], forms), _py_value(node.value, forms))
    if isinstance(node, ast.AugAssign):
        return _update(forms, _py_target(node.target, forms), _PY_OPS[type(node.op)],
                       _py_value(node.value, forms))
    if isinstance(node, ast.Expr):
        return ("expr", _whole(*_py_value(node.value, forms)))
    if isinstance(node, (ast.If, ast.While)):
        return ("if" if isinstance(node, ast.If) else "while",
                _whole(*_py_value(node.test, forms)))
    if isinstance(node, ast.For):
        return ("for", _py_target(node.target, forms), _whole(*_py_value(node.iter, forms)))
    if isinstance(node, ast.Return):
        return ("return", None if node.value is None else _whole(*_py_value(node.value, forms)))
    if isinstance(node, ast.Assert):
        return ("assert", _whole(*_py_value(node.test, forms)))
    if isinstance(node, (ast.Break, ast.Continue, ast.Pass)):
        return (type(node).__name__.lower(),)
    raise _Unread


def _py_target(node: ast.AST, forms: _Forms) -> Form:
    if isinstance(node, ast.Name):
        return ("name", node.id)
    if isinstance(node, (ast.Subscript, ast.Attribute)):
        return _whole(*_py_value(node, forms))
    raise _Unread


# --- C, C++, HIP: a small precedence parser ----------------------------------------------------

_C_TOKENS = on_first_use(
    r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|\.?\d(?:[eE][-+]\d|[\w.])*|->|&&|\|\||<<=?"
    r"|>>=?|\+\+|--|[-+*/%&|^<>=!]=|\S")
# Binary operators by how tightly they bind (C's order).
_C_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7,
             "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
_C_LOGICAL = {"||": "or", "&&": "and"}
_C_ASSIGN = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_C_TYPES = frozenset((
    "int", "float", "double", "char", "bool", "long", "short", "unsigned", "signed", "auto",
    "const", "constexpr", "volatile", "register", "static", "void", "size_t", "half",
    "__half", "__nv_bfloat16", "__hip_bfloat16", "bfloat16", "hip_bfloat16", "float2",
    "float4", "half2", "__half2", "__restrict__", "struct"))
_C_INTEGER = on_first_use(r"int|long|short|char|size_t|unsigned|signed|u?int\d+_t|ssize_t"
                          r"|ptrdiff_t|index_t")
_C_CASTS = frozenset(("static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"))


def _c_type_word(word: str) -> bool:
    return word in _C_TYPES or word.endswith("_t") or word == "*" or word == "&"


def _cast(words: list[str], value: tuple[int, Form]) -> tuple[int, Form]:
    """A cast's value: to a floating type the value itself (its spelling), to an integer the
    fraction dropped, to bool any non-zero true."""
    named = [w for w in words if w not in ("const", "volatile", "*", "&", "struct")]
    if any(w == "bool" for w in named):
        return 1, ("bool", _whole(*value))
    if any(_C_INTEGER.fullmatch(w) for w in named) and "*" not in words:
        return 1, ("int", _whole(*value))
    if "*" in words or "&" in words:
        return 1, ("cast", tuple(words), _whole(*value))
    return value


class _CParser:
    def __init__(self, tokens: list[str], forms: _Forms) -> None:
        self.tokens, self.at, self.forms = tokens, 0, forms

    def peek(self, ahead: int = 0) -> str | None:
        k = self.at + ahead
        return self.tokens[k] if k < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise _Unread
        self.at += 1
        return token

    def expression(self, lowest: int = 0) -> tuple[int, Form]:
        value = self.unary()
        while True:
            op = self.peek()
            if op == "?" and lowest == 0:
                self.take()
                then = self.expression()
                self.take(":")
                otherwise = self.expression()
                value = self.forms.note((1, ("?", _whole(*value), _whole(*then),
                                            _whole(*otherwise))))
                continue
            if op not in _C_BINARY or _C_BINARY[op] < lowest:
                return value
            self.take()
            right = self.expression(_C_BINARY[op] + 1)
            value = self.forms.note(self.forms.binary(_C_LOGICAL.get(op, op), value, right))

    def unary(self) -> tuple[int, Form]:
        token = self.peek()
        if token in ("-", "+"):
            self.take()
            sign, form = self.unary()
            return self.forms.note((-sign if token == "-" else sign, form))
        if token in ("!", "~", "*", "&", "++", "--"):
            self.take()
            return self.forms.note((1, ({"!": "not"}.get(token, token), _whole(*self.unary()))))
        if token == "(" and self._cast_ahead():
            self.take()
            words = []
            while self.peek() != ")":
                words.append(self.take())
            self.take(")")
            return self.forms.note(_cast(words, self.unary()))
        return self.postfix()

    def _cast_ahead(self) -> bool:
        k = self.at + 1
        words = []
        while k < len(self.tokens) and self.tokens[k] != ")":
            words.append(self.tokens[k])
            k += 1
        following = self.tokens[k + 1] if k + 1 < len(self.tokens) else None
        return bool(words) and all(_c_type_word(w) for w in words) and \
            any(w not in ("*", "&") for w in words) and following is not None and \
            (following == "(" or re.match(r"[\w.]", following) is not None)

    def postfix(self) -> tuple[int, Form]:
        value = self.primary()
        while True:
            token = self.peek()
            if token == "[":
                self.take()
                index = self.expression()
                self.take("]")
                value = (1, ("[]", _whole(*value), (_whole(*index),)))
            elif token == "(":
                self.take()
                arguments = []
                while self.peek() != ")":
                    arguments.append(self.expression())
                    if self.peek() == ",":
                        self.take()
                    elif self.peek() != ")":
                        raise _Unread
                self.take(")")
                value = self.forms.call(value, arguments, [])
            elif token in (".", "->"):
                self.take()
                name = self.take()
                if not re.match(r"[A-Za-z_]", name):
                    raise _Unread
                value = (1, (".", _whole(*value), name))
            elif token in ("++", "--"):
                self.take()
                value = (1, ("post" + token, _whole(*value)))
            else:
                return value
            self.forms.note(value)

    def primary(self) -> tuple[int, Form]:
        token = self.take()
        if token == "(":
            value = self.expression()
            self.take(")")
            return value
        name = re.sub(r"\s+", "", token)
        if name in _C_CASTS and self.peek() == "<":
            self.take()
            words = []
            while self.peek() != ">":
                words.append(self.take())
            self.take(">")
            self.take("(")
            value = self.expression()
            self.take(")")
            return self.forms.note(_cast(words, value))
        if re.match(r"\.?\d", token):
            return self.forms.note((1, _number(token)))
        if re.match(r"[A-Za-z_]", token):
            return self.forms.note(self.forms.name(name))
        raise _Unread


def _c_expression(tokens: list[str], forms: _Forms) -> tuple[int, Form]:
    parser = _CParser(tokens, forms)
    value = parser.expression()
    if parser.peek() is not None:
        raise _Unread
    return value


def _c_statements(text: str, forms: _Forms) -> list[Form]:
    text = text.strip()
    while text.startswith("}"):
        text = text[1:].lstrip()
    if text.endswith("{"):
        text = text[:-1].rstrip()
    if text in ("", "else", "do") or text.startswith("#"):
        return []
    tokens = _C_TOKENS.findall(text)
    if tokens and tokens[0] == "else":
        tokens = tokens[1:]
    said: list[Form] = []
    if tokens and tokens[0] in ("if", "while", "for", "switch") and len(tokens) > 1 \
            and tokens[1] == "(":
        depth, k = 0, 1
        for k in range(1, len(tokens)):
            depth += (tokens[k] == "(") - (tokens[k] == ")")
            if depth == 0:
                break
        if depth:
            raise _Unread
        inside = tokens[2:k]
        if tokens[0] == "for":
            parts = _split(inside, ";")
            if len(parts) != 3:
                raise _Unread
            said.append(("for", tuple(_c_simple(part, forms) if part else None for part in parts)))
        else:
            said.append((tokens[0], _whole(*_c_expression(inside, forms))))
        tokens = tokens[k + 1:]
        if not tokens:
            return said
        if tokens[-1] != ";":
            raise _Unread
    elif not tokens or tokens[-1] != ";":
        raise _Unread
    for part in _split(tokens, ";"):
        if part:
            said.append(_c_simple(part, forms))
    return said


def _split(tokens: list[str], separator: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = 0
    for token in tokens:
        depth += (token in "([{") - (token in ")]}")
        if token == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    if parts and not parts[-1] and separator == ";":
        parts.pop()
    return parts


def _c_simple(tokens: list[str], forms: _Forms) -> Form:
    if tokens[0] in ("break", "continue") and len(tokens) == 1:
        return (tokens[0],)
    if tokens[0] == "return":
        return ("return", _whole(*_c_expression(tokens[1:], forms)) if tokens[1:] else None)
    depth = 0
    for k, token in enumerate(tokens):
        depth += (token in "([{") - (token in ")]}")
        if depth == 0 and token in _C_ASSIGN:
            left, op, right = tokens[:k], token, tokens[k + 1:]
            break
    else:
        if len(tokens) > 1 and all(_c_type_word(w) for w in tokens[:-1]) and \
                re.match(r"[A-Za-z_]", tokens[-1]):
            forms.values.pop(tokens[-1], None)
            return ("declare", tokens[-1])  # `float w;`
        return ("expr", _whole(*_c_expression(tokens, forms)))
    if len(left) > 1 and all(_c_type_word(w) for w in left[:-1]) and \
            re.match(r"[A-Za-z_]", left[-1]) and op == "=":
        target: Form = ("name", left[-1])  # a declaration: `float w = ...`
    elif len(left) > 1:
        parser = _CParser(left, forms)
        target = _whole(*parser.postfix())
        if parser.peek() is not None:
            raise _Unread
    else:
        target = ("name", left[0])
    value = _c_expression(right, forms)
    if op == "=":
        return _set(forms, target, value)
    return _update(forms, target, op[:-1], value)


# --- statements ----------------------------------------------------------------------------------

def _set(forms: _Forms, target: Form, value: tuple[int, Form]) -> Form:
    """`t = v`: an update where `v` is a sum holding `t` (`y = y + w` adds `w` to `y`); a name
    set is read as its value from then on."""
    terms = _terms(_whole(*value))
    if (1, target) in terms:
        terms[(1, target)] -= 1
        return ("add", target, tuple(sorted(terms.elements(), key=_key)))
    if target[0] == "name":
        forms.values[target[1]] = value
    return ("set", target, _whole(*value))


def _update(forms: _Forms, target: Form, op: str, value: tuple[int, Form]) -> Form:
    if target[0] == "name":
        forms.values.pop(target[1], None)
    if op in ("+", "-"):
        terms = _terms(_whole(*value))
        if op == "-":
            terms = Counter({(-sign, form): n for (sign, form), n in terms.items()})
        return ("add", target, tuple(sorted(terms.elements(), key=_key)))
    return ("update", op, target, _whole(*value))


class BlockReading:
    """A block's statements read as forms (`statements`, each with the names set in the block
    it read through their values), the forms of every value written in it (`seen`), and the
    value each name set in it holds (`values`)."""

    def __init__(self) -> None:
        self.statements: list[tuple[Form, frozenset[str]]] = []
        self.seen: set[Form] = set()
        self.values: dict[str, Form] = {}
        self.pairs: dict[str, tuple[int, Form]] = {}
        self.sets: list[str] = []
        self.lines: list[bytes] = []
        self.braced = False
        # The index in `lines` of the line each statement was read from.
        self.at: list[int] = []

    def holds(self, value: Form) -> bool:
        """Whether this block writes `value` (a whole form), or a sum or a product holding
        its terms or factors."""
        if value in self.seen:
            return True
        terms, factors = _terms(value), _factors(value)
        summed = sum(terms.values()) > 1 or next(iter(terms))[0] < 0
        for form in self.seen:
            if summed and not terms - _terms(form):
                return True
            if factors is not None:
                theirs = _factors(form)
                if theirs is not None and not factors - theirs:
                    return True
        return False

    def does(self, statement: Form) -> bool:
        """Whether this block does `statement`'s work: the same statement, or an update adding
        to the same target terms among which are `statement`'s, or updates of that target
        only adding to it whose terms together are among them (`y[j] -= s` and
        `y[j] += x[j]` do `y[j] += x[j] - s`)."""
        for theirs, _ in self.statements:
            if theirs == statement:
                return True
            if statement[0] == "add" and theirs[0] == "add" and theirs[1] == statement[1] \
                    and not Counter(statement[2]) - Counter(theirs[2]):
                return True
        if statement[0] != "add":
            return False
        added = self._added_to(statement[1])
        return bool(added) and added == Counter(statement[2])

    def _added_to(self, target: Form) -> Counter:
        """The terms this block's updates add to `target` together, a term added and taken
        away again cancelled; none where a statement sets `target` or updates it otherwise
        (`y[j] = 0`, `y[j] *= 2` between: the updates' sum is no one step's), where an update
        adds what reads `target` itself (`y[j] += y[j]` doubles it), or where the block
        branches or loops (`if t: y[j] -= s` / `else: y[j] += x[j]`: each update runs on
        some paths only, their sum on none). Several updates do a statement's work only where
        their sum is its terms, no more (`y[j] -= s` and `y[j] += x[j]` twice add `2x - s`)."""
        added: Counter = Counter()
        nested = self._nested()
        for (theirs, _), at in zip(self.statements, self.at):
            if theirs[0] in ("set", "update") and target in theirs[1:3]:
                return Counter()
            if theirs[0] != "add" or theirs[1] != target:
                continue
            if at in nested:
                return Counter()
            if any(_reads(form, target) for _, form in theirs[2]):
                return Counter()
            for sign, form in theirs[2]:
                if added[(-sign, form)]:
                    added[(-sign, form)] -= 1
                else:
                    added[(sign, form)] += 1
        return +added

    def _nested(self) -> set[int]:
        """The indexes of this block's lines inside a branch or a loop of the block (deeper
        than its first level, within its braces, or after an `if`/`else`/`for`/`while` on
        their line: `if t: y[j] -= s`, `} else { y[j] += x[j]; }`): they run on some paths or
        rounds only. A check that leaves the block (`if j >= n: break`) leaves the lines
        after it at the first level."""
        texts = [raw.decode(errors="replace").rstrip() for raw in self.lines]
        # (A brace alone on its line, as read_block skips it, may close the block's header.)
        indents = [len(text) - len(text.lstrip()) for text in texts if text.strip()
                   and not (self.braced and text.strip() in ("{", "}", "};"))]
        base = min(indents, default=0)
        nested, depth = set(), 0
        for k, text in enumerate(texts):
            code = text.strip()
            if not code:
                continue
            closing = len(code) - len(code.lstrip("}")) if self.braced else 0
            depth = max(depth - closing, 0)
            if len(text) - len(text.lstrip()) > base or depth > 0 or \
                    _OPENS_BRANCH.match(code.lstrip("}").lstrip()) is not None:
                nested.add(k)
            if self.braced:
                depth = max(depth + code.count("{") - (code.count("}") - closing), 0)
        return nested

    def same_work(self, name: str, other: BlockReading) -> bool:
        """Whether `name`, set in this block, is a temporary of `other`'s work: `other` writes
        its value, or does each statement of this block that reads it."""
        if name not in self.values:
            return True
        if other.holds(self.values[name]):
            return True
        if all(other.does(statement) for statement, read in self.statements if name in read):
            return True
        return not self._shown_other(name, other)

    def shown_same(self, name: str, other: BlockReading) -> bool:
        """Whether `other` is shown to do the work of `name`, set in this block: it does each
        statement of this block reading it (and one does), signs and all. Asked where the
        fix's value holds a sign upstream's block writes only in an update (`w = -x[j]` /
        `y[j] += w` against `y[j] -= x[j]`), where no doubt is read as the same work: other
        work there (`y[j] += x[j]`) moves. (`holds` is not asked: it finds a product's
        factors whatever its sign, `-x[j] * s` in `x[j] * s`.)"""
        if name not in self.values:
            return False
        reading = [statement for statement, read in self.statements if name in read]
        return bool(reading) and all(other.does(statement) for statement in reading)

    def _shown_other(self, name: str, other: BlockReading) -> bool:
        """Whether `other` does the work of each line of this block reading `name` with
        `name`'s value turned (`_turned`: the terms of a sum negated, the operands of a `/`
        swapped): `w = x[j] - s` / `y[j] += w` against `y[j] += s - x[j]`. Only that is shown
        other work; the same value in other algebra (`x[j] / s` against `x[j] * (1 / s)`,
        `s * (x[j] - t)` against `s * x[j] - s * t`) reads as neither, and the caller keeps its
        older reading (a stop) rather than make the work twice."""
        if self.sets.count(name) != 1 or name not in self.pairs:
            return False
        for turned in _turned(self.pairs[name]):
            again = read_block(self.lines, self.braced, (name, turned))
            if again is None:
                continue
            reading = [statement for statement, read in again.statements if name in read]
            if reading and all(other.does(statement) for statement in reading):
                return True
        return False


def _turned(value: tuple[int, Form]) -> list[tuple[int, Form]]:
    """`value` with one sum's terms negated or one `/`'s operands swapped, each way it can be:
    values that differ from `value` wherever it is not zero (or not one)."""
    sign, form = value
    found: list[tuple[int, Form]] = []
    if _holds_sum(form):
        found.append((-sign, form))  # a sum, or a product or a quotient of one: its sign
    found.extend((sign, inner) for inner in _turned_within(form))
    return found


def _holds_sum(form: Form) -> bool:
    if form[0] == "sum":
        return True
    if form[0] == "prod":
        return any(_holds_sum(factor) for factor in form[1])
    return form[0] == "/" and (_holds_sum(form[1]) or _holds_sum(form[2]))


def _turned_within(form: Form) -> list[Form]:
    """`form` with one whole sum inside it negated or one `/` swapped (not `form`'s own sign)."""
    found: list[Form] = []
    if form[0] == "/":
        found.append(("/", form[2], form[1]))
    for k, part in enumerate(form):
        if not isinstance(part, tuple) or not part:
            continue
        if isinstance(part[0], str):
            changed = list(_turned_within(part))
            if part[0] == "neg" and isinstance(part[1], tuple) and part[1][:1] == ("sum",):
                changed.append(part[1])
            elif part[0] == "sum" and form[0] not in ("sum", "prod", "/", "neg"):
                changed.append(("neg", part))
            found.extend(form[:k] + (inner,) + form[k + 1:] for inner in changed)
        else:  # a tuple of forms (a call's arguments, an index, a sum's terms)
            for j, item in enumerate(part):
                if isinstance(item, tuple) and item and isinstance(item[0], str):
                    changed = list(_turned_within(item))
                    if item[0] == "neg" and isinstance(item[1], tuple) and \
                            item[1][:1] == ("sum",):
                        changed.append(item[1])
                    elif item[0] == "sum":
                        changed.append(("neg", item))
                    found.extend(form[:k] + (part[:j] + (inner,) + part[j + 1:],) + form[k + 1:]
                                 for inner in changed)
    return found


# A line opening a branch or a loop, or the other way of one (`if t:`, `} else {`).
_OPENS_BRANCH = on_first_use(r"(?:if|elif|else|for|while|do|switch|case|default)\b")


def _reads(form: object, target: Form) -> bool:
    """Whether `form` is `target` or holds it anywhere inside."""
    if form == target:
        return True
    return isinstance(form, tuple) and any(_reads(part, target) for part in form)


def read_block(lines: list[bytes], braced: bool,
               turned: tuple[str, tuple[int, Form]] | None = None) -> BlockReading | None:
    """`lines` (code of one block, its header left out; strings and comments taken out) read as
    forms, in C's syntax where `braced` else in Python's; None where a line is not read. With
    `turned` (a name, a value), that name set in the block holds that value instead."""
    reading = BlockReading()
    reading.lines, reading.braced = list(lines), braced
    values: dict[str, tuple[int, Form]] = {}
    for k, raw in enumerate(lines):
        try:
            text = raw.decode().strip()
        except UnicodeDecodeError:
            return None
        if not text or (braced and text in ("{", "}", "};")):
            continue
        forms = _Forms(values)
        try:
            said = _c_statements(text, forms) if braced else _py_statements(text, forms)
        except (_Unread, RecursionError):
            return None
        for statement in said:
            reading.statements.append((statement, frozenset(forms.read)))
            reading.at.append(k)
            if statement[0] == "set" and statement[1][0] == "name":
                set_name = statement[1][1]
                reading.values[set_name] = statement[2]
                reading.sets.append(set_name)
                if set_name in values:
                    reading.pairs[set_name] = values[set_name]
                if turned is not None and turned[0] == set_name and set_name in values:
                    values[set_name] = turned[1]
        reading.seen.update(forms.seen)
    return reading
