import datetime


def greeting() -> str:
    hour = datetime.datetime.now().hour
    return "good morning" if hour <= 12 else "good afternoon"
