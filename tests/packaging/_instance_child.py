"""Child process for test_single_instance: holds or pokes a SingleInstance.

Usage: python _instance_child.py KEY hold|poke|crash
  hold:  acquire, print "acquired", then print "activated" each time a second launch pokes us;
         exits after the first activation (or after 30 s).
  poke:  print the result of try_acquire() ("True"/"False") and exit.
  crash: acquire, print "acquired", then wait to be SIGKILLed (leaves a stale socket + lock).
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication, QTimer

from app.system.single_instance import SingleInstance


def main() -> int:
    key, mode = sys.argv[1], sys.argv[2]
    app = QCoreApplication(sys.argv[:1])
    instance = SingleInstance(key)
    acquired = instance.try_acquire()
    if mode == "poke":
        print(acquired, flush=True)
        return 0
    if not acquired:
        print("not-acquired", flush=True)
        return 1

    def on_activated() -> None:
        print("activated", flush=True)
        if mode == "hold":
            QTimer.singleShot(0, app.quit)

    instance.sig_activation_requested.connect(on_activated)
    QTimer.singleShot(30_000, app.quit)
    print("acquired", flush=True)
    app.exec()
    instance.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
