"""Clear errors for keyword arguments that were renamed."""

__all__ = ["refuse_renamed"]


def refuse_renamed(owner, given, renamed):
    """Raise a TypeError for the first keyword of ``given``, naming its new name if it has one.

    Parameters
    ----------
    owner : str
        The estimator or function, for the message.
    given : dict
        The keyword arguments that matched no parameter.
    renamed : dict of str to tuple of (str, str)
        Old name to (new name, why it changed).

    Raises
    ------
    TypeError
        If ``given`` is not empty.
    """
    for name in given:
        if name in renamed:
            new, why = renamed[name]
            raise TypeError(f"{owner}: {name!r} was renamed {new!r} ({why}).")
        raise TypeError(f"{owner} got an unexpected keyword argument {name!r}.")
