"""pidigits: pi to D decimal digits (Chudnovsky series, binary splitting, Python integers and libmpdec),
timed; the y-cruncher stand-in of the parallel suite (y-cruncher is closed source). Deterministic: the
digits' SHA-256 is printed, so a run that computed something else cannot pass.
usage: python3 pidigits.py DIGITS"""
import decimal
import hashlib
import sys
import time

C3_24 = 640320 ** 3 // 24


def split(a: int, b: int) -> tuple[int, int, int]:
    """P, Q, T of the Chudnovsky terms a..b-1."""
    if b - a == 1:
        if a == 0:
            p = q = 1
        else:
            p = (6 * a - 5) * (2 * a - 1) * (6 * a - 1)
            q = a * a * a * C3_24
        t = p * (13591409 + 545140134 * a)
        return p, q, -t if a & 1 else t
    m = (a + b) // 2
    p1, q1, t1 = split(a, m)
    p2, q2, t2 = split(m, b)
    return p1 * p2, q1 * q2, q2 * t1 + p1 * t2


def pi(digits: int) -> str:
    terms = digits // 14 + 2  # each term adds about 14.18 digits
    _, q, t = split(0, terms)
    ctx = decimal.Context(prec=digits + 10, Emax=decimal.MAX_EMAX)
    sqrt = ctx.sqrt(decimal.Decimal(10005))
    value = ctx.divide(ctx.multiply(ctx.multiply(decimal.Decimal(q), 426880), sqrt), decimal.Decimal(t))
    return str(value)[:digits + 2]  # "3." and the digits


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 10:
        print("usage: pidigits.py DIGITS (>= 10)", file=sys.stderr)
        return 2
    digits = int(sys.argv[1])
    t0 = time.monotonic()
    text = pi(digits)
    seconds = time.monotonic() - t0
    if not text.startswith("3.14159265358979"):
        print("pidigits: wrong digits", file=sys.stderr)
        return 1
    print(f"pidigits digits={digits} sha256={hashlib.sha256(text.encode()).hexdigest()}")
    print(f"seconds: {seconds:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
