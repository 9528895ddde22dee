import pytest
from units import convert, dimension, parse_quantity


def test_dimension():
    assert dimension("oz") == "mass"
    assert dimension("mi") == "length"
    assert dimension("day") == "time"
    assert dimension("m") == "length"


def test_dimension_unknown():
    for bad in ["KM", "parsec", ""]:
        with pytest.raises(KeyError):
            dimension(bad)


def test_convert_examples():
    assert convert(1, "km", "m") == pytest.approx(1000.0)
    assert convert(90, "min", "h") == pytest.approx(1.5)
    assert convert(2, "lb", "kg") == pytest.approx(0.90718474)
    assert isinstance(convert(1, "km", "m"), float)


def test_convert_more_units():
    assert convert(12, "in", "ft") == pytest.approx(1.0)
    assert convert(1, "mi", "km") == pytest.approx(1.609344)
    assert convert(16, "oz", "lb") == pytest.approx(1.0)
    assert convert(1.5, "day", "h") == pytest.approx(36.0)
    assert convert(250, "ms", "s") == pytest.approx(0.25)
    assert convert(-3, "cm", "mm") == pytest.approx(-30.0)


def test_convert_same_unit():
    result = convert(7, "kg", "kg")
    assert result == 7.0 and isinstance(result, float)


def test_convert_errors():
    with pytest.raises(KeyError):
        convert(1, "KM", "m")
    with pytest.raises(KeyError):
        convert(1, "m", "parsec")
    with pytest.raises(ValueError):
        convert(1, "km", "kg")
    with pytest.raises(ValueError):
        convert(1, "s", "m")


def test_convert_type_errors():
    assert convert(5, "m", "km") == pytest.approx(0.005)
    for bad in ["5", None, True, [1]]:
        with pytest.raises(TypeError):
            convert(bad, "m", "km")


def test_convert_check_order():
    with pytest.raises(KeyError):
        convert("x", "parsec", "m")
    with pytest.raises(TypeError):
        convert("x", "km", "kg")


def test_parse_quantity():
    assert parse_quantity("  12.5 km ") == (12.5, "km")
    assert parse_quantity("-3 min") == (-3.0, "min")
    assert parse_quantity("7   lb") == (7.0, "lb")
    assert isinstance(parse_quantity("7 lb")[0], float)


def test_parse_quantity_errors():
    for bad in ["", "km", "5", "5km", "1e3 m", "5 k m", "1. m", ".5 m", "+5 m"]:
        with pytest.raises(ValueError):
            parse_quantity(bad)
    with pytest.raises(KeyError):
        parse_quantity("5 parsec")
    with pytest.raises(TypeError):
        parse_quantity(5)
