"""Reference solution for specs/headers.md (validates the hidden tests only)."""


class HeaderError(ValueError):
    pass


def parse_headers(block: str) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    last: tuple[str, int] | None = None
    for raw in block.split("\n"):
        line = raw.removesuffix("\r")
        if line == "":
            break
        if line[0] in " \t":
            if last is None:
                raise HeaderError(f"continuation line with no field above it: {line!r}")
            name, index = last
            values[name][index] += " " + line.strip(" \t")
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or " " in name or "\t" in name:
            raise HeaderError(f"not a field line: {line!r}")
        key = name.lower()
        values.setdefault(key, []).append(value.strip(" \t"))
        last = (key, len(values[key]) - 1)
    return {key: ", ".join(parts) for key, parts in values.items()}


def _canonical(name: str) -> str:
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def format_headers(headers: dict[str, str]) -> str:
    lines = []
    for name, value in headers.items():
        if "\r" in value or "\n" in value:
            raise HeaderError(f"line break in the value of {name!r}")
        lines.append(f"{_canonical(name)}: {value}\r\n")
    return "".join(lines) + "\r\n"
