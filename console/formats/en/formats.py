"""The console's date formats: "1 Dec 2026, 10:03" rather than Django's English default
"Dec. 1, 2026, 10:03 a.m.", which the admin follows with its own full stop ("a.m..")."""

DATE_FORMAT = "j M Y"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "j M Y, H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
