"""YTsaurus runs in a compiled loop (issue 20; ``docs/plans/ytsaurus-compiled-loop.md``): ``pack.unsupported``
names what is outside the class, ``fill`` is the compiled twin of ``onedim``'s water-filling."""
