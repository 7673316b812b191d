"""Java ``SimpleDateFormat`` patterns (``yyyyMMdd``, ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``) in UTC.

Kafka's TimestampRouter and TimestampConverter take their ``format`` in this syntax, so existing
connector configs must keep working. Supported letters: y M d D H k K h m s S E a u z Z X;
``'quoted text'`` and ``''`` for a quote. Other letters are rejected with a clear error.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache

from streams.config import ConfigError

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_SUPPORTED = set("yMdDHkKhmsSEauzZX")


@lru_cache(maxsize=256)
def tokenize(pattern: str) -> tuple[tuple[str, int | str], ...]:
    """``(letter, count)`` for pattern letters and ``("'", text)`` for literals."""
    tokens: list[tuple[str, int | str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                tokens.append(("'", "'"))
                i += 2
                continue
            end = i + 1
            text = []
            while end < n:
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            if end >= n:
                raise ConfigError(f"invalid date format {pattern!r}: unterminated quote")
            tokens.append(("'", "".join(text)))
            i = end + 1
        elif c.isalpha():
            if c not in _SUPPORTED:
                raise ConfigError(f"invalid date format {pattern!r}: unsupported pattern letter "
                                  f"{c!r} (supported: {''.join(sorted(_SUPPORTED))})")
            j = i
            while j < n and pattern[j] == c:
                j += 1
            tokens.append((c, j - i))
            i = j
        else:
            tokens.append(("'", c))
            i += 1
    return tuple(tokens)


def validate(pattern: str) -> str:
    tokenize(pattern)
    return pattern


def format_datetime(value: _dt.datetime, pattern: str) -> str:
    """Format an instant (naive = UTC) in UTC with a SimpleDateFormat pattern."""
    if value.tzinfo is not None:
        value = value.astimezone(_dt.UTC)
    out: list[str] = []
    for letter, count in tokenize(pattern):
        if letter == "'":
            out.append(str(count))
            continue
        assert isinstance(count, int)
        if letter == "y":
            out.append(f"{value.year % 100:02d}" if count == 2 else f"{value.year:0{count}d}")
        elif letter == "M":
            if count >= 4:
                out.append(_MONTHS[value.month - 1])
            elif count == 3:
                out.append(_MONTHS[value.month - 1][:3])
            else:
                out.append(f"{value.month:0{count}d}")
        elif letter == "d":
            out.append(f"{value.day:0{count}d}")
        elif letter == "D":
            out.append(f"{value.timetuple().tm_yday:0{count}d}")
        elif letter == "H":
            out.append(f"{value.hour:0{count}d}")
        elif letter == "k":
            out.append(f"{value.hour or 24:0{count}d}")
        elif letter == "K":
            out.append(f"{value.hour % 12:0{count}d}")
        elif letter == "h":
            out.append(f"{value.hour % 12 or 12:0{count}d}")
        elif letter == "m":
            out.append(f"{value.minute:0{count}d}")
        elif letter == "s":
            out.append(f"{value.second:0{count}d}")
        elif letter == "S":
            out.append(f"{value.microsecond // 1000:0{count}d}")
        elif letter == "E":
            name = _DAYS[value.weekday()]
            out.append(name if count >= 4 else name[:3])
        elif letter == "u":
            out.append(f"{value.isoweekday():0{count}d}")
        elif letter == "a":
            out.append("AM" if value.hour < 12 else "PM")
        elif letter == "z":
            out.append("UTC" if count < 4 else "Coordinated Universal Time")
        elif letter == "Z":
            out.append("+0000")
        elif letter == "X":
            out.append("Z")
    return "".join(out)


@lru_cache(maxsize=256)
def _parser(pattern: str) -> tuple[re.Pattern[str], tuple[tuple[str, int], ...]]:
    tokens = tokenize(pattern)
    parts: list[str] = []
    groups: list[tuple[str, int]] = []
    for idx, (letter, count) in enumerate(tokens):
        if letter == "'":
            parts.append(re.escape(str(count)))
            continue
        assert isinstance(count, int)
        nxt = tokens[idx + 1][0] if idx + 1 < len(tokens) else "'"
        adjacent_number = nxt != "'" and nxt not in "EazZX"
        if letter == "M" and count >= 3 or letter == "E":
            rx = r"[A-Za-z]+"
        elif letter == "a":
            rx = r"[AaPp][Mm]"
        elif letter in "zZX":
            rx = r"Z|[+-]\d{2}:?\d{2}|[+-]\d{2}|UTC|GMT|[A-Za-z ]+"
        elif adjacent_number or count > 1:
            width = 4 if (letter == "y" and count != 2) else count
            rx = rf"[+-]?\d{{{width}}}" if letter == "y" and width > 4 else rf"\d{{{width}}}"
        else:
            rx = r"\d{1,4}" if letter in "yS" else r"\d{1,3}" if letter == "D" else r"\d{1,2}"
        parts.append(f"({rx})")
        groups.append((letter, count))
    return re.compile("".join(parts)), tuple(groups)


def parse_datetime(text: str, pattern: str) -> _dt.datetime:
    """Parse ``text`` with a SimpleDateFormat pattern (UTC unless the text has an offset)."""
    regex, groups = _parser(pattern)
    match = regex.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"could not parse timestamp {text!r} with format {pattern!r}")
    year, month, day, hour, minute, second, ms = 1970, 1, 1, 0, 0, 0, 0
    pm: bool | None = None
    offset = _dt.timedelta(0)
    yday: int | None = None
    for (letter, count), raw in zip(groups, match.groups(), strict=True):
        if letter == "y":
            year = int(raw)
            if count == 2:
                year += 2000 if year < 80 else 1900
        elif letter == "M":
            if raw.isdigit():
                month = int(raw)
            else:
                names = [m.lower() for m in _MONTHS]
                key = raw.lower()
                found = [i for i, m in enumerate(names) if m == key or m[:3] == key]
                if not found:
                    raise ValueError(f"unknown month {raw!r} in {text!r}")
                month = found[0] + 1
        elif letter == "d":
            day = int(raw)
        elif letter == "D":
            yday = int(raw)
        elif letter in "Hk":
            hour = int(raw) % 24
        elif letter in "Kh":
            hour = int(raw) % 12
        elif letter == "m":
            minute = int(raw)
        elif letter == "s":
            second = int(raw)
        elif letter == "S":
            ms = int(raw)
        elif letter == "a":
            pm = raw.lower() == "pm"
        elif letter in "zZX":
            offset = _parse_offset(raw)
    if pm is not None and pm and hour < 12:
        hour += 12
    result = _dt.datetime(year, month, day, hour, minute, second, tzinfo=_dt.UTC)
    if yday is not None:
        result = result.replace(month=1, day=1) + _dt.timedelta(days=yday - 1)
    return result + _dt.timedelta(milliseconds=ms) - offset


def _parse_offset(raw: str) -> _dt.timedelta:
    raw = raw.strip()
    if raw in ("Z", "UTC", "GMT") or raw.isalpha() or not raw:
        return _dt.timedelta(0)
    sign = -1 if raw[0] == "-" else 1
    digits = raw[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    return sign * _dt.timedelta(hours=hours, minutes=minutes)
