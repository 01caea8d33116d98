# The public API as IDEs and type checkers see it: fairscan/__init__.py imports these names on
# first use (module __getattr__), which static analysis cannot follow. Kept equal to __all__ by
# tests/test_exported_members.py.
from fairscan.api import AuditOutcome as AuditOutcome
from fairscan.api import PreparedAudit as PreparedAudit
from fairscan.api import RunOptions as RunOptions
from fairscan.api import diff_reports as diff_reports
from fairscan.api import load_report as load_report
from fairscan.api import load_spec as load_spec
from fairscan.api import load_spec_from_text as load_spec_from_text
from fairscan.api import prepare_audit as prepare_audit
from fairscan.api import run_audit as run_audit
from fairscan.api import run_prepared as run_prepared
from fairscan.errors import DataError as DataError
from fairscan.errors import FairscanError as FairscanError
from fairscan.errors import ScanError as ScanError
from fairscan.errors import ServiceError as ServiceError
from fairscan.errors import SpecError as SpecError
from fairscan.errors import UsageError as UsageError
from fairscan.inmemory import audit as audit
from fairscan.report.models import AuditReport as AuditReport
from fairscan.report.models import Effect as Effect
from fairscan.report.models import Finding as Finding
from fairscan.report.models import ScanResult as ScanResult
from fairscan.report.models import Statistic as Statistic
from fairscan.report.models import Verdict as Verdict
from fairscan.scans import SCAN_TYPES as SCAN_TYPES
from fairscan.scans.base import ScanType as ScanType

__version__: str
__all__: list[str]

def __dir__() -> list[str]: ...
