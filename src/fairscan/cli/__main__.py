"""``python -m fairscan.cli``: the ``audit`` command."""

from fairscan.cli import main

main()
