"""YuniKorn's inter-queue preemption for a compiled loop, class by class (issue 20;
``docs/plans/yunikorn-compiled-loop.md``): ``pack.unsupported`` names what is outside the class."""
