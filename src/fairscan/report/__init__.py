"""The report layer: the result contract (``models``), the scan types' render hooks (``hooks``),
and the writers (JSON, Markdown, HTML, JUnit, console, baseline comparison, v1 upgrade)."""
