"""Reading delays and start times at the edges: seconds, RFC 3339, Unix seconds, bad values."""

from __future__ import annotations

import pytest

from workflow_manager.starttimes import MAX_DELAY_S, StartTimeError, start_time

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("delay", "not_before", "expected"),
    [
        (None, None, None),
        ("2", None, NOW + 2),
        (" 0.5 ", None, NOW + 0.5),
        (None, "1800000100", 1_800_000_100.0),
        (None, "2027-01-15T08:00:00Z", 1_800_000_000.0),
        (None, "2027-01-15T09:00:00+01:00", 1_800_000_000.0),
        (None, "2020-01-01T00:00:00Z", 1_577_836_800.0),  # past: starts at once
        ("5", "1800000100", 1_800_000_100.0),  # both: the later
        ("500", "1800000100", NOW + 500),
    ],
)
def test_start_times(delay, not_before, expected):
    assert start_time(delay, not_before, NOW) == expected


@pytest.mark.parametrize(
    ("delay", "not_before", "named", "says"),
    [
        ("soon", None, "x-delay", "number of seconds"),
        ("-1", None, "x-delay", ">= 0"),
        ("nan", None, "x-delay", "finite"),
        ("1e12", None, "x-delay", "ten years"),
        (None, "tomorrow", "x-not-before", "RFC 3339"),
        (None, "2027-01-15T08:00:00", "x-not-before", "RFC 3339"),  # no zone
        (None, "1e12", "x-not-before", "after the year 9999"),
        (None, "9999-12-31T00:00:00Z", "x-not-before", "more than ten years from now"),
        (None, "2084-01-01T00:00:00+00:00", "x-not-before", "more than ten years from now"),
        (None, "2200000000", "x-not-before", "ten years from now; are those ms?"),
    ],
)
def test_bad_values_name_the_header(delay, not_before, named, says):
    with pytest.raises(StartTimeError) as caught:
        start_time(delay, not_before, NOW, "x-delay", "x-not-before")
    assert named in str(caught.value) and says in str(caught.value)


def test_a_start_time_just_within_ten_years_is_accepted():
    ten_years = NOW + MAX_DELAY_S
    assert start_time(None, str(ten_years), NOW) == ten_years
    assert start_time(str(MAX_DELAY_S), None, NOW) == ten_years
