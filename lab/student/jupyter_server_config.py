"""The student lab's Validate button (hooklab.lab_validate, prebuilt in the pack): JupyterLab looks for it in the pack
itself, wherever and however the pack is installed (editable by make and conda, or a wheel); its server side is
turned on in jupyter_server_config.json beside this file."""

from hooklab.lab_validate import LABEXTENSIONS

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.LabApp.extra_labextensions_path = [str(LABEXTENSIONS)]
