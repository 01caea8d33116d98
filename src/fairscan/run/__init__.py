"""The library's run layer: what ``audit run``, ``audit scan``, ``fairscan.audit`` and the
other commands call. Nothing here prints, reads environment variables or exits; the CLI does.

    options   RunOptions (the CLI's flags) and AuditOutcome (the report, the files written)
    specs     a spec file or a mapping validated into a LoadedSpec; data-free checks; overrides
    prepare   the data read, checked and encoded (a file, a stream, a lazy or in-memory table)
    execute   every scan run with its seed stream; the gated verdict; provenance; writing
    reports   reading a JSON report back (ReportView), diffing two, writing report files
    power     the detectability threshold of ``audit power``

``fairscan.api`` re-exports the public names; import them from there.
"""
