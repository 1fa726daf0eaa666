// hooklab's Validate for the student lab: a toolbar button (and the command hooklab:validate) that saves the
// notebook, has the server run nbgrader's validator on it (hooklab/lab_validate/handler.py) and shows the summary
// it returns, one line per failing exercise, in a dialog. No test source and no traceback reach the page.
import { Dialog, ToolbarButton, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

const COMMAND = 'hooklab:validate';
const ENDPOINT = 'hooklab/validate';

/** The summary's lines for the notebook at `path` (relative to the server's root), or one line saying why not. */
async function summary(path) {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, ENDPOINT);
  let response;
  try {
    response = await ServerConnection.makeRequest(
      url, { method: 'POST', body: JSON.stringify({ path }) }, settings);
  } catch (error) {
    return [`Validate could not reach the server: ${error.message || error}`];
  }
  let body = {};
  try {
    body = await response.json();
  } catch (error) {
    body = {};
  }
  if (!response.ok) {
    return [body.message || `Validate failed: the server answered ${response.status} ${response.statusText}`];
  }
  return Array.isArray(body.lines) ? body.lines : ['Validate failed: the server sent no summary'];
}

/** The summary as plain text lines (textContent, never markup). */
function summaryNode(lines) {
  const node = document.createElement('div');
  node.className = 'hooklab-validate-summary';
  node.style.whiteSpace = 'pre-wrap';
  for (const line of lines) {
    const row = document.createElement('div');
    row.textContent = line;
    node.appendChild(row);
  }
  return node;
}

const running = new WeakSet(); // notebook panels being validated: another click meanwhile does nothing

async function validate(panel, button) {
  if (running.has(panel)) {
    return;
  }
  running.add(panel);
  const label = text => {
    if (button) {
      const node = button.node.querySelector('.jp-ToolbarButtonComponent-label');
      if (node) {
        node.textContent = text;
      }
    }
  };
  let lines;
  try {
    label('Saving...');
    await panel.context.save();
    label('Validating...');
    lines = await summary(panel.context.path);
  } catch (error) {
    lines = [`Validate could not save the notebook: ${error.message || error}`];
  }
  label('Validate');
  try {
    await showDialog({
      title: 'Validate',
      body: new Widget({ node: summaryNode(lines) }),
      buttons: [Dialog.okButton()]
    });
  } finally {
    running.delete(panel);
  }
}

const plugin = {
  id: 'hooklab-validate:plugin',
  description: "hooklab's Validate button: a summary of the visible tests, one line per failing exercise",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app, tracker) => {
    app.commands.addCommand(COMMAND, {
      label: 'Validate',
      caption: 'Run the notebook from a fresh kernel and sum up its visible tests',
      isEnabled: () => tracker.currentWidget !== null,
      execute: () => (tracker.currentWidget ? validate(tracker.currentWidget, null) : undefined)
    });
    tracker.widgetAdded.connect((_, panel) => {
      const button = new ToolbarButton({
        className: 'hooklab-validate-button',
        label: 'Validate',
        tooltip: 'Run the notebook from a fresh kernel and sum up its visible tests',
        onClick: () => void validate(panel, button)
      });
      let index = 0; // before the toolbar's spacer, as nbgrader's own button
      for (const item of panel.toolbar.children()) {
        if (item.node.classList.contains('jp-Toolbar-spacer')) {
          break;
        }
        index++;
      }
      panel.toolbar.insertItem(index, 'hooklabValidate', button);
    });
  }
};

export default plugin;
